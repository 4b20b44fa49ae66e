"""The drop-in's surface against faster-whisper 1.2's own (installed here): signatures, defaults, fields, and the
argument mapping (compat/plan.py), without decoding anything."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
import soundfile

import asr_specdec
from asr_specdec.compat import model as compat_model
from asr_specdec.compat.plan import (
    UnsupportedOption,
    clip_ranges,
    search_options,
    suppressed_tokens,
)
from asr_specdec.errors import SpecdecError

faster_whisper = pytest.importorskip("faster_whisper")
OURS_ONLY = {"mode", "assistant_model", "num_draft_tokens", "draft_schedule", "speculative_options", "model_kwargs",
             "diarize"}
OUR_FIELDS = ("speaker",)  # the result types' extras, after faster-whisper's fields


def parameters(function) -> list[tuple[str, object]]:
    return [(name, parameter.default) for name, parameter in inspect.signature(function).parameters.items()
            if name not in OURS_ONLY]


@pytest.mark.parametrize("name", ["WhisperModel", "BatchedInferencePipeline", "decode_audio", "available_models",
                                  "format_timestamp"])
def test_every_name_imports_from_the_package(name):
    assert callable(getattr(asr_specdec, name))


@pytest.mark.parametrize("ours, theirs", [
    (asr_specdec.WhisperModel.__init__, faster_whisper.WhisperModel.__init__),
    (asr_specdec.WhisperModel.transcribe, faster_whisper.WhisperModel.transcribe),
    (asr_specdec.WhisperModel.detect_language, faster_whisper.WhisperModel.detect_language),
    (asr_specdec.BatchedInferencePipeline.__init__, faster_whisper.BatchedInferencePipeline.__init__),
    (asr_specdec.BatchedInferencePipeline.transcribe, faster_whisper.BatchedInferencePipeline.transcribe),
    (asr_specdec.decode_audio, faster_whisper.decode_audio),
    (asr_specdec.format_timestamp, faster_whisper.format_timestamp),
])
def test_signatures_and_defaults_are_faster_whispers(ours, theirs):
    assert parameters(ours) == parameters(theirs)


def test_our_extras_are_keyword_only():
    signature = inspect.signature(asr_specdec.WhisperModel.__init__).parameters
    assert all(signature[name].kind is inspect.Parameter.KEYWORD_ONLY
               for name in ("mode", "assistant_model", "num_draft_tokens", "draft_schedule"))
    for transcribe in (asr_specdec.WhisperModel.transcribe, asr_specdec.BatchedInferencePipeline.transcribe):
        assert inspect.signature(transcribe).parameters["diarize"].kind is inspect.Parameter.KEYWORD_ONLY


def test_transcribe_arguments_match_between_model_and_pipeline():  # faster-whisper's own test
    model = set(inspect.getargs(asr_specdec.WhisperModel.transcribe.__code__).args)
    pipeline = set(inspect.getargs(asr_specdec.BatchedInferencePipeline.transcribe.__code__).args)
    pipeline.remove("batch_size")
    assert model == pipeline
    from dataclasses import fields

    from asr_specdec.compat.plan import SAME
    from asr_specdec.compat.types import TranscriptionOptions

    # plan_call maps them in one pass: the keywords it passes on as they are, and faster-whisper's info record
    assert set(SAME) <= model
    assert {field.name for field in fields(TranscriptionOptions)} - {"temperatures"} <= model


@pytest.mark.parametrize("name", ["Segment", "Word", "TranscriptionInfo", "TranscriptionOptions"])
def test_result_types_have_faster_whispers_fields(name):
    from asr_specdec import compat

    theirs = getattr(faster_whisper.transcribe, name)
    assert [field.name for field in dataclasses.fields(getattr(compat, name)) if field.name not in OUR_FIELDS] == \
        [field.name for field in dataclasses.fields(theirs)]


def test_available_models_and_format_timestamp_are_faster_whispers():
    assert asr_specdec.available_models() == faster_whisper.available_models()
    for seconds in (0.0, 1.0, 59.9996, 61.5, 3600 * 2 + 0.0015, 12345.678):
        for hours in (False, True):
            for marker in (".", ","):
                assert asr_specdec.format_timestamp(seconds, hours, marker) == \
                    faster_whisper.format_timestamp(seconds, hours, marker)


def test_decode_audio_splits_stereo_as_faster_whisper_does(tmp_path):
    rate = 22050
    time = np.arange(rate) / rate
    left, right = 0.5 * np.sin(2 * np.pi * 440 * time), 0.25 * np.sin(2 * np.pi * 880 * time)
    path = tmp_path / "stereo.wav"
    soundfile.write(path, np.stack([left, right], axis=1), rate)
    ours, theirs = asr_specdec.decode_audio(str(path), split_stereo=True), \
        faster_whisper.decode_audio(str(path), split_stereo=True)
    for channel, reference in zip(ours, theirs):
        assert channel.dtype == np.float32 and abs(len(channel) - len(reference)) <= 16
        size = min(len(channel), len(reference))
        assert np.abs(channel[:size] - reference[:size]).max() < 0.02  # both resampled to 16 kHz, s16 there
    assert [round(float(np.abs(channel).max()) * 4) for channel in ours] == [2, 1]  # peaks 0.5 and 0.25
    mono = asr_specdec.decode_audio(str(path))
    assert np.allclose(mono, (ours[0] + ours[1]) / 2, atol=1e-3)
    with open(path, "rb") as file:  # a file-like object, too
        assert np.array_equal(asr_specdec.decode_audio(file), mono)


def test_clip_timestamps_are_read_as_faster_whisper_reads_them():
    assert clip_ranges("0", 20.0) is None and clip_ranges([0.0], 20.0) is None
    assert clip_ranges("1.5,4,10", 20.0) == [(1.5, 4.0), (10.0, 20.0)]  # the last end defaults to the end
    assert clip_ranges([2, 3], 20.0) == [(2.0, 3.0)]
    assert clip_ranges([{"start": 1, "end": 2}, {"start": 5, "end": 30}], 20.0) == [(1.0, 2.0), (5.0, 20.0)]
    with pytest.raises(SpecdecError, match="ends"):
        clip_ranges("5,1", 20.0)
    with pytest.raises(SpecdecError, match="numbers"):
        clip_ranges("a,b", 20.0)


def test_suppress_tokens_follow_faster_whispers_rule():
    default, special = (5, 6, 50358), (50358, 50359)
    assert suppressed_tokens([-1], default, special) == (5, 6, 50358, 50359)
    assert suppressed_tokens([-1, 11], default, special) == (5, 6, 11, 50358, 50359)
    assert suppressed_tokens([11], default, special) == (11, 50358, 50359)
    assert suppressed_tokens(None, default, special) == () and suppressed_tokens([], default, special) == ()


def test_what_cannot_be_honoured_is_refused_by_name():
    assert search_options(1, 1.0, 1.0) == {}
    ctranslate2 = {"beam_algorithm": "ctranslate2"}  # faster-whisper's beam search, its length_penalty honoured
    assert search_options(5, 1.0, 1.0) == {"beam_size": 5, "patience": 1.0, "length_penalty": 1.0, **ctranslate2}
    assert search_options(3, 2.0, 0.5) == {"beam_size": 3, "patience": 2.0, "length_penalty": 0.5, **ctranslate2}
    assert search_options(0, 1.0, 1.0)["beam_size"] == 0  # its range is the options' (Recipe refuses it)
    assert issubclass(UnsupportedOption, SpecdecError) and issubclass(UnsupportedOption, NotImplementedError)
    with pytest.raises(UnsupportedOption, match="int8_float16"):
        compat_model._compute_type("int8_float16")
    assert compat_model._compute_type("default") is None and compat_model._compute_type("int8_float32") == "int8"
    assert compat_model._device("cpu", 0) == "cpu"
    with pytest.raises(UnsupportedOption, match="device_index"):
        compat_model._device("cpu", [0, 1])


def test_model_options_that_cannot_be_honoured_are_refused_before_loading():
    with pytest.raises(UnsupportedOption, match="files"):
        asr_specdec.WhisperModel("tiny.en", files={"model.bin": b""})
    with pytest.raises(UnsupportedOption, match="download_root"):
        asr_specdec.WhisperModel("small", download_root="/tmp/models")
