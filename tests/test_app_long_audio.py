"""app/long_audio.py: window-by-window transcription gives exactly what the library gives in one call, and
reports progress once per window."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.long_audio import transcribe_with_progress
from asr_specdec.audio import load_audio
from asr_specdec.whisper import SpeculativeWhisper

pytestmark = pytest.mark.slow

AUDIO = Path(__file__).resolve().parents[1].parent / "shared" / "audio"


@pytest.fixture(scope="module")
def long_speech() -> np.ndarray:
    """Two short utterances 30 s apart: two windows, few tokens."""
    pause = np.zeros(30 * 16000, dtype=np.float32)
    return np.concatenate([load_audio(AUDIO / "LJ002-0020.wav"), pause, load_audio(AUDIO / "librivox-0880.wav")])


def test_windows_with_progress_equal_one_library_call(long_speech, tiny_en_dir):
    decoder = SpeculativeWhisper("tiny.en", mode="quantized-self", num_draft_tokens=4)
    expected = decoder.transcribe(long_speech)
    reports = []
    result = transcribe_with_progress(decoder, long_speech, lambda done, what: reports.append((done, what)))
    assert len(expected.window_tokens) == 2
    assert result.window_tokens == expected.window_tokens
    assert result.text == expected.text and len(result.segments) == len(expected.segments)
    for got, want in zip(result.segments, expected.segments):
        # the library rounds window-relative times to 1 ms before the window's offset is added
        assert got.text == want.text and got.start == pytest.approx(want.start, abs=0.002)
        assert got.end == pytest.approx(want.end, abs=0.002)
    assert (result.language, result.duration, result.mode) == (expected.language, expected.duration, expected.mode)
    assert (result.stats.new_tokens, result.stats.drafted_tokens, result.stats.accepted_tokens) == (
        expected.stats.new_tokens, expected.stats.drafted_tokens, expected.stats.accepted_tokens)
    assert len(result.stats.token_from_draft) == len(result.tokens)
    assert reports == [(0.0, "transcribing window 1 of 2"), (0.5, "transcribing window 2 of 2"), (1.0, "done")]
