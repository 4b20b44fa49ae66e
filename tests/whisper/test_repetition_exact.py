"""faster-whisper's repetition options on a window (`repetition_penalty`, `no_repeat_ngram_size`) through the window
pipeline on tiny random Whisper models: they change what the window decodes, and every drafter still returns
exactly plain decoding's tokens, greedy (the n-gram ban through the greedy masks, the penalty from full logits)
and with beams, with and without timestamps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from asr_specdec.core.beam import BeamSearch
from asr_specdec.whisper.runtime.pipeline import Window

from ..tiny_whisper import features_for
from .test_beam_exact import same
from .test_compute_exact import DRAFTERS, MAIN, pipeline_for

REPEATS = {"ngram": {"no_repeat_ngram_size": 2}, "penalty": {"repetition_penalty": 1.8},
           "both": {"repetition_penalty": 0.8, "no_repeat_ngram_size": 3}}


def windows(repeat: dict, beam: BeamSearch | None = None) -> list[Window]:
    """Windows 0..3, with timestamps when odd."""
    return [Window(features_for(MAIN, seed), timestamps=seed % 2 == 1, beam=beam, **repeat) for seed in range(4)]


def decode(pipeline, rows: list[Window]):
    return [(row.tokens, row.beam.sum_logprob, row.beam.candidates) if row.beam else (row.tokens, 0.0, [])
            for row in pipeline.decode(rows)]


@pytest.mark.parametrize("repeat", REPEATS)
@pytest.mark.parametrize("beam", [None, BeamSearch(3)], ids=["greedy", "beam"])
def test_every_drafter_gives_plain_decoding_under_repetition_rules(repeat, beam):
    plain = decode(pipeline_for(MAIN, "float32"), windows(REPEATS[repeat], beam))
    unruled = decode(pipeline_for(MAIN, "float32"), windows({}, beam))
    assert sum(got[0] != other[0] for got, other in zip(plain, unruled)) >= 2  # the rules change the output
    if repeat == "ngram":
        for tokens, _, _ in plain:
            assert len(set(zip(tokens, tokens[1:]))) == len(tokens) - 1
    for name, factory in DRAFTERS.items():
        assert same(decode(pipeline_for(MAIN, "float32", factory), windows(REPEATS[repeat], beam)), plain), name


def test_the_ban_through_the_certified_greedy_choice_equals_the_full_logits():
    rows = windows(REPEATS["ngram"])
    certified = pipeline_for(MAIN, "float32")
    full = pipeline_for(MAIN, "float32")
    full.runner.certified_argmax = False
    assert [row.tokens for row in certified.decode(rows)] == [row.tokens for row in full.decode(rows)]
    # a fallback's copy of a window keeps its repetition rules
    assert replace(rows[0], score=True).no_repeat_ngram_size == 2
