"""Batched speculative transcription on real weights and real speech: every shared clip in one batch, each
row's tokens equal to that clip transcribed alone by plain greedy."""

from __future__ import annotations

import pytest

from asr_specdec.weights.whisper_models import load_whisper
from asr_specdec.whisper import SpeculativeWhisper

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base(base_dir):
    return load_whisper(str(base_dir))


@pytest.fixture(scope="module")
def clips(shared_audio, manifest):
    from asr_specdec.whisper.io.audio import load_audio

    return [load_audio(shared_audio / entry["audio"]) for entry in manifest]


@pytest.fixture(scope="module")
def alone(base, clips):
    plain = SpeculativeWhisper(base, mode="off", language="en")
    return [plain.transcribe(samples).tokens for samples in clips]


@pytest.mark.parametrize("mode, batch_size", [("off", 12), ("quantized-self", 12), ("quantized-self", 5)])
def test_every_clip_in_one_batch_equals_it_alone(base, clips, alone, mode, batch_size):
    whisper = SpeculativeWhisper(base, mode=mode, language="en")
    results = whisper.transcribe_batch(clips, batch_size=batch_size)
    assert [result.tokens for result in results] == alone
    if mode != "off":
        drafted = sum(result.stats.drafted_tokens for result in results)
        accepted = sum(result.stats.accepted_tokens for result in results)
        assert accepted / drafted > 0.8  # measured ~0.95: the int8 decoder agrees almost always


def test_language_is_detected_per_row(base, clips, alone):
    whisper = SpeculativeWhisper(base, mode="quantized-self")  # no language given: detected row by row
    results = whisper.transcribe_batch(clips[:3], batch_size=3)
    assert [result.language for result in results] == ["en"] * 3
    # English detected: each row's tokens are those of the clip decoded alone in English (the module's plain decodes)
    assert [result.tokens for result in results] == alone[:3]


@pytest.fixture(scope="module")
def multilingual(shared_audio):
    from asr_specdec.whisper.io.audio import load_audio

    return load_audio(shared_audio / "peer" / "multilingual.mp3")  # English, then German: two windows


def test_language_and_task_in_a_batch(base, clips, multilingual):
    """transcribe_batch takes the language, the task and `multilingual` as transcribe does (each file as
    `transcribe(file, long_form="chunked")`): the first window's language kept for the rest, or every window's own."""
    whisper = SpeculativeWhisper(base, mode="quantized-self")
    files = [multilingual, clips[0]]

    def outcomes(results):
        return [(result.language, result.tokens, [segment.text for segment in result.segments]) for result in results]

    default = outcomes(whisper.transcribe_batch(files, batch_size=4))
    for options in ({"multilingual": True}, {"language": "de"}, {"task": "translate", "multilingual": True}):
        batched = outcomes(whisper.transcribe_batch(files, batch_size=4, **options))
        assert batched == outcomes([whisper.transcribe(file, long_form="chunked", **options) for file in files])
        assert batched != default, options
