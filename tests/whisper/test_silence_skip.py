"""A window the model judges silent (no-speech probability above the silence threshold at start-of-transcript)
is not decoded: no token is generated for it, on every path that decodes windows. On sox-style dithered
silence (a quarter of the samples +-1 LSB) tiny.en's no-speech probability is above 0.8 while, decoded, it says
" you" (openai's own rule would keep that: its log-probability is high): so the same call with the silence
threshold off generates tokens, and this test can fail."""

from __future__ import annotations

import numpy as np
import pytest

from asr_specdec.weights.whisper_models import load_whisper
from asr_specdec.whisper import SpeculativeWhisper


def dithered_silence(seconds: float) -> np.ndarray:
    generator = np.random.default_rng(0)
    audio = np.zeros(int(seconds * 16000), dtype=np.float32)
    flipped = generator.random(len(audio)) < 0.25
    audio[flipped] = generator.choice([-1.0, 1.0], int(flipped.sum())) / 32768
    return audio


@pytest.fixture(scope="module")
def tiny_en(tiny_en_dir):
    return load_whisper(str(tiny_en_dir))


@pytest.fixture(scope="module")
def silence():
    return dithered_silence(35)  # two windows


@pytest.mark.parametrize("call", [{}, {"long_form": "chunked"}, {"timestamps": False}, {"vad_filter": True}])
def test_silent_windows_generate_no_token(tiny_en, silence, call):
    asr = SpeculativeWhisper(tiny_en, mode="quantized-self")
    result = asr.transcribe(silence, **call)
    assert result.text == "" and result.stats.new_tokens == 0
    assert all(tokens == [] for tokens in result.window_tokens)


def test_the_same_windows_decode_when_the_silence_threshold_is_off(tiny_en, silence):
    result = SpeculativeWhisper(tiny_en, mode="off", silence_threshold=None).transcribe(silence)
    assert result.stats.new_tokens > 0 and len(result.window_tokens) == 2


def test_batch_rows_judged_silent_leave_the_batch(tiny_en, silence, shared_audio):
    from asr_specdec.whisper.io.audio import load_audio

    speech = load_audio(shared_audio / "librivox-0870.wav")
    asr = SpeculativeWhisper(tiny_en, mode="quantized-self")
    alone = asr.transcribe(speech, timestamps=False)
    batched = asr.transcribe_batch([silence[:16000 * 10], speech, silence[:16000 * 5]], batch_size=3)
    assert [result.text for result in batched] == ["", alone.text, ""]
    assert batched[1].window_tokens == alone.window_tokens and batched[0].window_tokens == [[]]
    assert batched[0].stats.new_tokens == batched[2].stats.new_tokens == 0
