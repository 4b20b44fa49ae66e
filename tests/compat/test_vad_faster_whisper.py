"""The drop-in's speech regions are faster-whisper 1.2.1's (asr_specdec/compat/vad.py): the same speech probabilities
as its VAD model, and the same regions from them as its get_speech_timestamps, under every option. Cheap: the VAD
model only (no Whisper), a few clips, and random probability sequences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from asr_specdec.compat import vad
from asr_specdec.whisper.longform.vad import VadOptions

faster_whisper_vad = pytest.importorskip("faster_whisper.vad")

OPTION_SETS = [
    {},  # faster-whisper's defaults: no limit on a region's length
    {"min_silence_duration_ms": 500, "speech_pad_ms": 200},  # faster-whisper's test_vad
    {"min_silence_duration_ms": 160, "max_speech_duration_s": 30},  # its batched defaults
    {"threshold": 0.3, "min_speech_duration_ms": 250, "max_speech_duration_s": 5, "min_silence_duration_ms": 100},
    {"neg_threshold": 0.2, "speech_pad_ms": 30, "max_speech_duration_s": 3, "min_silence_duration_ms": 0},
]


def ours(probabilities_or_samples, length: int | None, values: dict) -> list[tuple[int, int]]:
    options = VadOptions(**{key: value for key, value in values.items() if key != "max_speech_duration_s"})
    limit = values.get("max_speech_duration_s", float("inf"))
    if length is None:
        return vad.faster_whisper_regions(probabilities_or_samples, options, limit)
    return vad.regions_from_probabilities(probabilities_or_samples, length, options, limit)


def theirs(samples: np.ndarray, values: dict) -> list[tuple[int, int]]:
    regions = faster_whisper_vad.get_speech_timestamps(samples, faster_whisper_vad.VadOptions(**values))
    return [(region["start"], region["end"]) for region in regions]


@pytest.fixture(scope="module")
def clips(shared_audio):
    from asr_specdec.whisper.io.audio import load_audio

    names = ["peer/jfk.flac", "goforward.wav", "common_voice_en_651325.mp3", "LJ002-0035.wav",
             "ES2011a.Headset-0-40s-46s.wav"]
    return {name: load_audio(str(shared_audio / name)) for name in names}


def test_speech_probabilities_are_faster_whispers(clips):
    model = faster_whisper_vad.get_vad_model()
    for name, samples in clips.items():
        padded = np.pad(samples, (0, vad.FRAME - len(samples) % vad.FRAME))
        expected = np.asarray(model(padded)).reshape(-1)
        assert np.array_equal(vad.speech_probabilities(samples), expected), name


@pytest.mark.parametrize("values", OPTION_SETS, ids=str)
def test_regions_are_faster_whispers_on_real_speech(clips, values):
    for name, samples in clips.items():
        assert ours(samples, None, values) == theirs(samples, values), name


def test_regions_from_random_probabilities_are_faster_whispers(monkeypatch):
    """faster-whisper's rules over made-up probabilities (runs of speech and silence of random lengths, values on
    both sides of both thresholds): every branch (padding halved between close regions, cuts at the length limit
    with and without a silence to cut at, short regions dropped, a region open at the end)."""
    generator = np.random.default_rng(37)
    probabilities = None
    monkeypatch.setattr(faster_whisper_vad, "get_vad_model", lambda: lambda padded: probabilities)
    checked = set()
    for trial in range(400):
        runs = []
        while sum(len(run) for run in runs) < 400:
            level = generator.choice([0.05, 0.3, 0.42, 0.5, 0.7, 0.95])
            runs.append(np.clip(level + generator.normal(0, 0.08, generator.integers(1, 60)), 0, 1))
        probabilities = np.concatenate(runs).astype(np.float32)
        length = vad.FRAME * len(probabilities) - int(generator.integers(1, vad.FRAME))
        values = {"threshold": float(generator.choice([0.3, 0.5, 0.6])),
                  "neg_threshold": [None, 0.2][trial % 2],
                  "min_speech_duration_ms": int(generator.choice([0, 250])),
                  "min_silence_duration_ms": int(generator.choice([0, 100, 300, 1000, 2000])),
                  "speech_pad_ms": int(generator.choice([0, 30, 200, 400])),
                  "max_speech_duration_s": float(generator.choice([np.inf, 2, 3, 5, 30]))}
        expected = theirs(np.zeros(length, dtype=np.float32), values)
        assert ours(probabilities, length, values) == expected, (trial, values)
        checked.add(len(expected))
    assert len(checked) > 5  # the trials gave many different numbers of regions


def test_the_model_file_is_chosen_by_its_content_and_a_stand_in_is_announced(monkeypatch):
    package = vad._package_model()
    vad._model.cache_clear()
    try:
        # the installed package's file taken as v6.0 (its hash): it is used, streamed frame by frame, silently
        monkeypatch.setattr(vad, "V6_0_SHA256", __import__("hashlib").sha256(package.read_bytes()).hexdigest())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert isinstance(vad._model(), vad._StreamingModel)
        vad._model.cache_clear()
        monkeypatch.setattr(vad, "V6_0_SHA256", "0" * 64)  # not v6.0: faster-whisper's copy, announced
        with pytest.warns(UserWarning, match="faster-whisper's own VAD model file"):
            assert isinstance(vad._model(), vad._SequenceModel)
        vad._model.cache_clear()
        monkeypatch.setattr(vad, "_faster_whisper_asset", lambda: None)  # nor that: the package's, announced
        with pytest.warns(UserWarning, match="may differ from faster-whisper's"):
            assert isinstance(vad._model(), vad._StreamingModel)
    finally:
        vad._model.cache_clear()


def test_streaming_a_frame_at_a_time_equals_one_sequence_call(clips):
    """The two calling conventions give the same probabilities on the same weights (silero-vad's streaming file
    and its sequence file), so the package's v6.0 file, streamed, gives faster-whisper's probabilities too."""
    data = vad._package_model().parent  # the package is not imported: its import sets torch's threads to one
    sequence = data / "silero_vad_16k_sequence.onnx"
    if not sequence.is_file():
        pytest.skip("this silero-vad has no sequence model")
    streaming = vad._StreamingModel(vad._session(data / "silero_vad.onnx"))
    whole = vad._SequenceModel(vad._session(sequence))
    rows = vad.framed(clips["peer/jfk.flac"])
    assert np.array_equal(streaming(rows), whole(rows))
