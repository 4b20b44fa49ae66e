"""Speculative beam search returns exactly plain beam search's result (tokens, sum of log-probabilities, every
candidate in order) on tiny random models: every drafter, every compute type, batches of windows (equal to each
window alone), with timestamps, and whole sequential long-form runs (same windows, segments and seeking)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from asr_specdec.core.beam import BeamSearch
from asr_specdec.core.beam_ctranslate2 import CTranslate2BeamSearch
from asr_specdec.whisper.longform.sequential import transcribe_sequential
from asr_specdec.whisper.recipe import scoring, window_extras
from asr_specdec.whisper.recipe.window_extras import recipe_analysis
from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner
from asr_specdec.whisper.runtime.pipeline import Window, _row_states

from ..tiny_longform import FRAMES, TIMESTAMP_BEGIN, long_features, timestamp_whisper, window_decoder
from ..tiny_whisper import EOS, drafter_factories, features_for
from .test_compute_exact import COMPUTE_TYPES, DRAFTERS, MAIN, NATIVE, pipeline_for

BEAM = BeamSearch(3, patience=1.5)


def beam_decode(pipeline, seeds, beam=BEAM):
    """Window `seed` with timestamps when the seed is odd (rows of one batch follow their own rules)."""
    windows = [Window(features_for(pipeline.model, seed), timestamps=seed % 2 == 1, beam=beam) for seed in seeds]
    return [(row.tokens, row.beam.sum_logprob, row.beam.candidates) for row in pipeline.decode(windows)]


def same(got, expected) -> bool:
    """Bit for bit on the native kernels; on the PyTorch path (no kernels) a pass's rounding may depend on its
    rows: the same tokens and candidates, sums within float32 rounding (what was measured to hold)."""
    if NATIVE:
        return got == expected
    return all(tokens == other_tokens and abs(total - other_total) < 1e-3
               and [c for c, _ in candidates] == [c for c, _ in other_candidates]
               for (tokens, total, candidates), (other_tokens, other_total, other_candidates) in zip(got, expected))


@pytest.mark.parametrize("compute", COMPUTE_TYPES)
def test_every_drafter_gives_plain_beam_search_at_every_compute_type(compute):
    plain = pipeline_for(MAIN, compute)
    expected = beam_decode(plain, [0, 1])
    if compute == "float32":
        assert same([beam_decode(plain, [seed])[0] for seed in (0, 1)], expected)  # batched rows as alone
    for name, factory in DRAFTERS.items():
        assert same(beam_decode(pipeline_for(MAIN, compute, factory), [0, 1]), expected), name


def test_beam_search_differs_from_greedy_and_a_good_drafter_saves_passes():
    plain, drafted = pipeline_for(MAIN, "float32"), pipeline_for(MAIN, "float32", DRAFTERS["assistant-self"])
    greedy = [row.tokens for row in plain.decode([Window(features_for(MAIN, seed)) for seed in (0, 2)])]
    assert greedy != [tokens for tokens, _, _ in beam_decode(plain, (0, 2))]
    rows = drafted.decode([Window(features_for(MAIN, seed), beam=BEAM) for seed in (0, 2)])
    assert sum(row.stats.main_passes for row in rows) < sum(row.stats.beam_steps for row in rows)


LONG_MAIN = timestamp_whisper(0)
LONG_DRAFTERS = drafter_factories(LONG_MAIN, timestamp_whisper(1))


def long_run(drafter_factory=None):
    decode = window_decoder(LONG_MAIN, drafter_factory, 4, False, None, beam=BeamSearch(2))
    return transcribe_sequential(long_features(1), decode, TIMESTAMP_BEGIN, EOS, FRAMES, True)


def test_long_form_with_beams_every_drafter():
    expected = long_run()
    assert len(expected.window_tokens) > 1
    for name, factory in LONG_DRAFTERS.items():
        output = long_run(factory)
        assert (output.window_tokens, output.segments) == (expected.window_tokens, expected.segments), name


@pytest.mark.skipif(not NATIVE, reason="scores read from beam search's log-probabilities on the native kernels only")
@pytest.mark.parametrize("beam", [BEAM, CTranslate2BeamSearch(3)])
def test_a_beam_windows_score_needs_no_pass_and_equals_the_pass(monkeypatch, beam):
    """A scored beam window (its no-speech probability read before generating) takes its score from the
    log-probabilities beam search kept: the bits score_window's own pass gives, plain and speculative alike."""
    real = scoring.score_window
    made = []

    def both(*arguments):  # the score as decoding asks for it, and the same score by a pass of its own
        kept = real(*arguments)
        passed = replace(real(*arguments[:10], None, None), no_speech_prob=arguments[11])
        made.append((arguments[10], kept, passed))
        return kept

    monkeypatch.setattr(window_extras, "score_window", both)
    scores = {}
    for name, factory in (("plain", None), ("assistant-self", DRAFTERS["assistant-self"])):
        made.clear()
        pipeline = pipeline_for(MAIN, "float32", factory)
        pipeline.pipeline.analysis = recipe_analysis
        windows = [Window(features_for(MAIN, seed), timestamps=seed % 2 == 1, beam=beam, score=True,
                          silence_threshold=1.0) for seed in (0, 1)]
        rows = pipeline.decode(windows)
        assert len(made) == 2 and all(log_probs is not None and len(log_probs) > 1 for log_probs, _, _ in made)
        assert all(kept == passed for _, kept, passed in made), name
        scores[name] = [row.extras.score for row in rows]
        if factory is not None:
            assert sum(row.stats.drafted_tokens for row in rows) > 0
    assert scores["plain"] == scores["assistant-self"]


@pytest.mark.skipif(not NATIVE, reason="the prompt's start is kept in the cache on the native kernels only")
@pytest.mark.parametrize("beam", [BEAM, CTranslate2BeamSearch(3)])
def test_the_prompt_start_fed_for_the_no_speech_probability_is_not_fed_again(monkeypatch, beam):
    """A window asking for its no-speech probability has its prompt up to start-of-transcript fed into the decode's
    own cache, and beam search goes on from there: the same result as without the question (tokens, sums,
    candidates, log-probabilities), the probability a pass of its own gives, and the prompt's start not fed twice."""
    fed = []
    real_feed = WhisperDecoderRunner.feed_rows

    def counting(self, cache, feeds, starts):
        fed.append(sum(len(feed) for feed in feeds))
        return real_feed(self, cache, feeds, starts)

    monkeypatch.setattr(WhisperDecoderRunner, "feed_rows", counting)
    results = {}
    for threshold in (None, 1.0):
        fed.clear()
        pipeline = pipeline_for(LONG_MAIN, "float32")
        windows = [Window(features_for(LONG_MAIN, seed), timestamps=seed % 2 == 1, beam=beam, previous=[5, 6, 7, 8],
                          silence_threshold=threshold) for seed in (0, 1)]
        rows = pipeline.decode(windows)
        results[threshold] = ([(row.tokens, row.beam.sum_logprob, row.beam.candidates, row.beam.log_probs)
                               for row in rows], sum(fed))
    assert results[1.0][0] == results[None][0]
    assert all(len(tokens) > 1 for tokens, _, _, _ in results[1.0][0])
    # an English-only prompt with timestamps ends at start-of-transcript: held whole, its last token is fed again
    # for the first step's logits; nothing else is fed twice
    assert results[1.0][1] == results[None][1] + sum(window.timestamps for window in windows)
    pipeline = pipeline_for(LONG_MAIN, "float32").pipeline
    windows = [Window(features_for(LONG_MAIN, seed), timestamps=seed % 2 == 1, beam=beam, previous=[5, 6, 7, 8],
                      silence_threshold=1.0) for seed in (0, 1)]
    with torch.inference_mode():
        _, encoder_output, cross_states, cache = pipeline._encode([window.features for window in windows])
        prompts = [pipeline.tokens.prompt(None if not pipeline.tokens.multilingual else
                                          pipeline.tokens.language_token("en"), "transcribe", window.timestamps,
                                          window.previous) for window in windows]
        probabilities, held = pipeline._no_speech(windows, prompts, encoder_output, cross_states, cache)
        alone = [pipeline._no_speech_probability(prompt, encoder_output[row:row + 1], _row_states(cross_states, row))
                 for row, prompt in enumerate(prompts)]
    assert probabilities == alone and all(len(start) > 4 for start in held)
