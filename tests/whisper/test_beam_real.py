"""Beam search on real weights (base) and two shared clips: speculative beam search returns exactly plain beam
search's result (tokens, sum of log-probabilities, every candidate) at the default compute type with the default
drafter, and at float32 with the early-exit drafter; through transcribe, the same text."""

from __future__ import annotations

import pytest

from asr_specdec.core.beam import BeamSearch
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.runtime.pipeline import Window

pytestmark = pytest.mark.slow
CLIPS = ("goforward.wav", "librivox-0880.wav")


@pytest.fixture(scope="module")
def clips(shared_audio):
    from asr_specdec.whisper.io.audio import load_audio

    return [load_audio(shared_audio / name) for name in CLIPS]


def beams(whisper: SpeculativeWhisper, clips, timestamps: bool):
    """(tokens, sum, candidates) per clip, and how many steps were replayed without a pass of their own."""
    pipeline = whisper.pipeline
    windows = [Window(pipeline.features(samples), language_id=whisper.tokens.language_token("en"),
                      timestamps=timestamps, beam=BeamSearch(5)) for samples in clips]
    rows = whisper.decode_windows(windows)  # drafted by its own drafter
    replayed = sum(row.stats.beam_steps - row.stats.main_passes for row in rows)
    return [(row.tokens, row.beam.sum_logprob, row.beam.candidates) for row in rows], replayed


@pytest.mark.parametrize("compute, mode, timestamps", [("auto", "quantized-self", True),
                                                       ("float32", "early-exit", False)])
def test_speculative_beam_search_is_plain_beam_search(base_dir, clips, compute, mode, timestamps):
    plain = SpeculativeWhisper(str(base_dir), mode="off", language="en", compute_type=compute)
    # a fixed draft length drafts every pass (the adaptive one stops where drafting does not pay)
    speculative = SpeculativeWhisper(str(base_dir), mode=mode, language="en", compute_type=compute,
                                     num_draft_tokens=4, draft_schedule="fixed")
    expected, _ = beams(plain, clips, timestamps)
    assert all(len(candidates) == 5 for _, _, candidates in expected)
    got, replayed = beams(speculative, clips, timestamps)
    assert got == expected
    if mode == "quantized-self":  # half the layers rarely get all 5 beams' children right; the int8 copy does
        assert replayed > 0
    if mode == "quantized-self":
        assert speculative.transcribe(clips[0], beam_size=5).text == plain.transcribe(clips[0], beam_size=5).text
