"""Live transcription with Whisper base on real speech: every update's tokens equal plain greedy decoding of the
same buffer and prompt, most of them come from the previous hypothesis, and the final committed text is the
offline transcript's (after Whisper's English normaliser). The schedule is the fixed clock's (one update per
chunk), so that it does not depend on this machine's speed; timings belong to eval/bench/streaming.py."""

from __future__ import annotations

import pytest

from asr_specdec.weights.whisper_models import load_whisper
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.io.audio import load_audio
from asr_specdec.whisper.live.replay import play
from asr_specdec.whisper.live.streaming import StreamingTranscriber
from eval.metrics import normalize

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def asr(base_dir):
    return SpeculativeWhisper(load_whisper(str(base_dir)), mode="quantized-self", language="en")


@pytest.mark.parametrize("clip", ["librivox-0870.wav", "ES2011a.Headset-0-40s-46s.wav"])
def test_live_updates_are_exact_and_end_with_the_offline_text(asr, shared_audio, clip):
    samples = load_audio(shared_audio / clip)
    stream = StreamingTranscriber(asr, compare=True)
    updates = [live.update for live in play(stream, samples, chunk_seconds=1.0, clock="fixed")]
    decoded = [update for update in updates if update.stats is not None]
    assert len(decoded) >= 5
    assert all(update.identical for update in decoded)
    from_hypothesis = sum(update.drafting.hypothesis_accepted for update in decoded)
    assert from_hypothesis > 0.4 * sum(update.stats.new_tokens for update in decoded)
    # words are committed while the clip still plays, not only at its end
    assert any(update.committed for update in updates if update.audio_seconds < len(samples) / 16000 - 1)
    assert normalize(updates[-1].committed) == normalize(asr.transcribe(samples).text)
