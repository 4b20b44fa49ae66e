"""faster-whisper 1.2.1's tests/test_transcribe.py, ported: every call of each test runs on faster-whisper itself
and on the drop-in, on the same CTranslate2 weights of `base` at float32 (reference_compare.py), with
faster-whisper's defaults (beam_size=5); faster-whisper's output is the expected value, segment for segment (text,
start, end; words where the test asks for them). faster-whisper's own audio is in ../shared/audio/peer; its
physicsworks.wav is not available, multilingual.mp3 stands in. Each test keeps its original assertions too,
stated over faster-whisper's output on base (its suite runs tiny)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from asr_specdec import BatchedInferencePipeline, WhisperModel, decode_audio

from .reference_compare import comparable, fields


def same(pair, words: bool = False):
    """Assert ours == faster-whisper's (up to a window both had to sample: reference_compare.comparable); return
    (theirs, ours) segments."""
    (theirs, _), (ours, _) = pair
    expected, actual = comparable(theirs, ours, words)
    assert actual == expected
    return theirs, ours


def same_batched_words(reference, audio: str, batch_size: int, **arguments):
    """The batched pipeline's words at `batch_size`, against faster-whisper's own chunks decoded one at a time:
    CTranslate2's batched encoder is not batch-invariant, so faster-whisper's word times move with the batch (by a DTW
    step here and there, at most 0.1 s on these clips; its text does not), while ours are the same at every batch size
    (rows equal alone). Asserts ours at `batch_size` == ours alone == faster-whisper's alone; returns (faster-whisper's
    alone, ours at `batch_size`, our info)."""
    (theirs_alone, _), (ours_alone, _) = reference.pair("batched", audio, batch_size=1, **arguments)
    ours, info = reference.decode("ours", "batched", audio, batch_size=batch_size, **arguments)
    assert fields(ours, True) == fields(ours_alone, True) == fields(theirs_alone, True)
    return theirs_alone, ours, info


def monotonic(segments, duration: float) -> None:
    for segment, following in zip(segments, segments[1:]):
        assert segment.start <= segment.end <= following.start
        for word in segment.words:
            assert word.start <= word.end <= segment.end
    assert segments[-1].end <= duration


def test_supported_languages(reference, tmp_path):
    from asr_specdec.weights.packs import assemble_pack

    theirs = reference.faster_whisper.WhisperModel(str(assemble_pack("tiny.en", tmp_path)), device="cpu")
    assert WhisperModel("tiny.en").supported_languages == theirs.supported_languages == ["en"]
    # faster-whisper lists its fixed 100 codes for any multilingual model; "yue" has no token in base's vocabulary
    theirs = [code for code in reference.models["theirs"][0].supported_languages if code != "yue"]
    assert reference.models["ours"][0].supported_languages == theirs


def test_transcribe(reference, peer_audio):
    jfk = str(peer_audio / "jfk.flac")
    pair = reference.pair("model", jfk, word_timestamps=True)
    theirs, ours = same(pair, words=True)
    (_, their_info), (_, info) = pair
    assert info.language == their_info.language == "en" and info.language_probability > 0.9
    assert info.duration == their_info.duration == 11
    assert info.all_language_probs[0] == (info.language, info.language_probability)
    assert info.all_language_probs[0][0] == their_info.all_language_probs[0][0]
    for segment in ours:
        assert segment.text == "".join(word.word for word in segment.words)
        assert segment.start == segment.words[0].start and segment.end == segment.words[-1].end

    pair = reference.pair("batched", jfk, word_timestamps=True, vad_filter=False)
    theirs, ours = same(pair)
    assert len(ours) == 1 and pair[1][1].language == "en" and pair[1][1].language_probability > 0.7


def test_batched_transcribe(reference, peer_audio):
    audio = str(peer_audio / "multilingual.mp3")
    pair = reference.pair("batched", audio, batch_size=16)
    same(pair)
    assert pair[1][1].language == "en" and pair[1][1].language_probability > 0.7
    theirs, ours, _ = same_batched_words(reference, audio, 16, without_timestamps=False, word_timestamps=True)
    assert all(segment.words is not None for segment in ours)


def test_empty_audio(reference):
    audio = np.asarray([], dtype="float32")
    for side in ("theirs", "ours"):
        model, pipeline = reference.models[side]
        assert list(model.transcribe(audio)[0]) == []
        assert list(pipeline.transcribe(audio)[0]) == []
    their_language = reference.models["theirs"][0].detect_language(audio)[0]
    assert reference.models["ours"][0].detect_language(audio)[0] == their_language


def test_prefix_with_timestamps(reference, peer_audio):
    theirs, ours = same(reference.pair("model", str(peer_audio / "jfk.flac"), prefix="And so my fellow Americans"))
    assert ours[0].start == 0 and 10 < ours[-1].end <= 11


def test_vad(reference, peer_audio):
    pair = reference.pair("model", str(peer_audio / "jfk.flac"), vad_filter=True,
                          vad_parameters=dict(min_silence_duration_ms=500, speech_pad_ms=200))
    theirs, ours = same(pair)
    # on base, two segments where tiny gives faster-whisper's test one
    assert 0 < ours[0].start < 1 and 10 < ours[-1].end < 11 and "".join(segment.text for segment in ours) == (
        " And so my fellow Americans, ask not what your country can do for you, ask what you can do for your country.")
    info = pair[1][1]
    assert info.vad_options.min_silence_duration_ms == 500 and info.vad_options.speech_pad_ms == 200


def test_stereo_diarization(reference, peer_audio):
    left, right = decode_audio(str(peer_audio / "stereo_diarization.wav"), split_stereo=True)
    same(reference.pair("model", left, key="stereo_diarization:left"))
    same(reference.pair("model", right, key="stereo_diarization:right"))


def test_multilingual_transcription(reference, peer_audio):
    audio = decode_audio(str(peer_audio / "multilingual.mp3"))
    theirs, ours = same(reference.pair("model", audio, key="multilingual", multilingual=True,
                                       without_timestamps=True, condition_on_previous_text=False))
    assert ours[0].text.startswith(" Permission is hereby granted") and "Software" in ours[1].text
    theirs, ours = same(reference.pair("batched", audio, key="multilingual", multilingual=True))
    assert ours[0].text.startswith(" Permission is hereby granted") and "Software" in ours[1].text


def test_hotwords(reference, peer_audio):
    audio = decode_audio(str(peer_audio / "hotwords.mp3"))
    for call in ("model", "batched"):
        pair = reference.pair(call, audio, key="hotwords", hotwords="ComfyUI")
        theirs, ours = same(pair)
        assert "ComfyUI" in ours[0].text and pair[1][1].transcription_options.hotwords == "ComfyUI"


def test_transcribe_signature():
    model_arguments = set(inspect.getargs(WhisperModel.transcribe.__code__).args)
    pipeline_arguments = set(inspect.getargs(BatchedInferencePipeline.transcribe.__code__).args)
    pipeline_arguments.remove("batch_size")
    assert model_arguments == pipeline_arguments


def test_monotonic_timestamps(reference, peer_audio):
    audio = str(peer_audio / "multilingual.mp3")  # physicsworks.wav stands in
    pair = reference.pair("model", audio, word_timestamps=True)
    theirs, ours = same(pair, words=True)
    monotonic(ours, pair[1][1].duration)
    theirs, ours, info = same_batched_words(reference, audio, 8, word_timestamps=True)  # faster-whisper's default
    monotonic(ours, info.duration)


def test_cliptimestamps_segments(reference, peer_audio):
    audio = decode_audio(str(peer_audio / "jfk.flac"))
    clips = [{"start": 0.0, "end": 11.0}, {"start": 11.0, "end": 22.0}]
    theirs, ours = same(reference.pair("batched", np.concatenate([audio, audio]), key="jfk+jfk",
                                       clip_timestamps=clips))
    assert [(segment.start, segment.end) for segment in ours] == [(0.0, 11.0), (11.0, 22.0)]


def test_cliptimestamps_timings(reference, peer_audio):
    audio = decode_audio(str(peer_audio / "multilingual.mp3"))  # physicsworks.wav stands in
    clips = [{"start": 0.0, "end": 5.0}, {"start": 6.0, "end": 15.0}]
    theirs, ours = same(reference.pair("batched", audio, key="multilingual", clip_timestamps=clips))
    assert [(segment.start, segment.end) for segment in ours] == [(0.0, 5.0), (6.0, 15.0)]


@pytest.fixture(scope="module")
def peer_audio(shared_audio):
    return shared_audio / "peer"
