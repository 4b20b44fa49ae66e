"""CTranslate2's beam search (core/beam_ctranslate2.py, faster-whisper's algorithm) on models whose scores are set
by hand: equal to a direct transcription of CTranslate2's BeamSearch loop (global top 2 * beam_size candidates,
end-of-text finishing only in the first beam_size slots, every hypothesis of a step counted, patience, sum /
length ** length_penalty); not openai's algorithm; speculative equals plain whatever the drafts."""

from __future__ import annotations

import pytest
import torch

from asr_specdec.core.beam import BeamSearch
from asr_specdec.core.beam_ctranslate2 import CTranslate2BeamSearch
from asr_specdec.core.engine import GenerationSettings, generate_beams
from asr_specdec.core.logits import LogitRules

from .test_beam import EOS, REPEATS, ScriptedDrafter, TableTarget, random_model, settings


def reference_ctranslate2(logits_of, prompt, beam: CTranslate2BeamSearch, rules: LogitRules, limit: int):
    """CTranslate2's BeamSearch::search for one batch row, written out: one beam at the first step, float32 sums,
    the top 2k candidates over all beams, slot k replaced by the next non-end candidate when it ends."""
    size = beam.beam_size
    beams = [(list(prompt), torch.tensor(0.0))]
    hypotheses, top_finished = [], False
    while True:
        candidates = []
        for tokens, total in beams:
            logits = rules.apply(logits_of(tokens)[None], len(tokens), tokens)[0]
            scores = torch.log_softmax(logits.float(), dim=-1) + total
            candidates += [(scores[token], tokens, token) for token in range(len(scores))]
        candidates = sorted(candidates, key=lambda item: float(item[0]), reverse=True)[:2 * size]
        last = len(beams[0][0]) + 1 >= limit
        spare = [item for item in candidates[size:] if item[2] != EOS]
        kept = []
        for slot, (score, tokens, token) in enumerate(candidates[:size]):
            if token == EOS or last:
                hypotheses.append((tuple(tokens[len(prompt):]) + (token,), float(score)))
                top_finished |= slot == 0 and token == EOS
                if last:
                    continue
                score, tokens, token = spare.pop(0)
            kept.append((tokens + [token], score))
        beams = kept
        if last or (top_finished if beam.penalty == 0 else len(hypotheses) >= beam.max_candidates):
            break
    ranked = sorted(hypotheses, key=lambda item: beam.rank_score(item[1], len(item[0]) - (item[0][-1] == EOS)),
                    reverse=True)
    return list(ranked[0][0]), ranked[0][1]


SEARCHES = [CTranslate2BeamSearch(1), CTranslate2BeamSearch(2), CTranslate2BeamSearch(4),
            CTranslate2BeamSearch(3, patience=2.0), CTranslate2BeamSearch(5, length_penalty=0.5),
            CTranslate2BeamSearch(3, patience=0.5), CTranslate2BeamSearch(3, length_penalty=0.0)]


@pytest.mark.parametrize("beam", SEARCHES)
def test_plain_search_is_ctranslate2s_loop(beam):
    rules = LogitRules(suppress_tokens=(3,), begin_suppress_tokens=(EOS,), begin_index=2)
    for seed in range(6):
        model = random_model(seed)
        outcome = generate_beams(TableTarget(model, 1), [[0, 1]], [settings(beam, 12, rules)])[0]
        assert (outcome.tokens, outcome.sum_logprob) == reference_ctranslate2(model, [0, 1], beam, rules, 14), seed


def test_it_is_not_openais_algorithm():
    differing = 0
    for seed in range(20):
        model = random_model(seed, eos_bias=-1.0)
        ours = generate_beams(TableTarget(model, 1), [[0, 1]], [settings(CTranslate2BeamSearch(3), 12)])[0]
        openai = generate_beams(TableTarget(model, 1), [[0, 1]], [settings(BeamSearch(3), 12)])[0]
        differing += (ours.tokens, ours.candidates) != (openai.tokens, openai.candidates)
    assert differing > 0


def test_ranking_is_ctranslate2s():
    assert CTranslate2BeamSearch(3).rank_score(-3.0, 4) == pytest.approx(-0.75)
    assert CTranslate2BeamSearch(3, length_penalty=2.0).rank_score(-3.0, 2) == pytest.approx(-0.75)
    assert CTranslate2BeamSearch(3, length_penalty=0.0).rank_score(-3.0, 4) == -3.0
    assert CTranslate2BeamSearch(3).rank_score(-3.0, 0) == float("-inf")
    for bad in ({"beam_size": 0}, {"patience": 0}, {"patience": 0.1}):
        with pytest.raises(ValueError):
            CTranslate2BeamSearch(**{"beam_size": 2, **bad})


@pytest.mark.parametrize("rules", [LogitRules()] + REPEATS)
@pytest.mark.parametrize("wrong", [0.0, 0.3, 1.0])
def test_speculative_equals_plain_whatever_the_drafts(wrong, rules):
    from asr_specdec.core.draft_length import DraftLength

    prompts = [[0, 1], [0, 2, 4], [0, 3]]
    for seed in range(3):
        model = random_model(seed, eos_bias=-3.0)
        rows = [settings(CTranslate2BeamSearch(size, patience=patience), 16, rules)
                for size, patience in ((3, None), (2, 2.0), (5, None))]
        plain_target = TableTarget(model, len(prompts))
        plain = generate_beams(plain_target, prompts, rows)
        rows = [GenerationSettings(**{**row.__dict__, "draft_length": DraftLength(4)}) for row in rows]
        target = TableTarget(model, len(prompts))
        drafter = ScriptedDrafter(model, wrong, seed)
        speculative = generate_beams(target, prompts, rows, drafter)
        for got, expected in zip(speculative, plain):
            assert (got.tokens, got.sum_logprob, got.candidates, got.log_probs) == (
                expected.tokens, expected.sum_logprob, expected.candidates, expected.log_probs)
            assert got.stats.beam_steps == expected.stats.beam_steps
            assert got.stats.drafted_tokens > 0  # the drafter proposed tokens
        if wrong == 0.0 and rules == LogitRules():  # drafts of the model's raw best tokens: passes saved
            assert target.passes < plain_target.passes


@pytest.mark.parametrize("beam", [BeamSearch(3), BeamSearch(2, patience=2.0), CTranslate2BeamSearch(3),
                                  CTranslate2BeamSearch(2, patience=2.0)])
def test_the_winners_log_probabilities_are_its_tokens_and_add_up_to_its_sum(beam):
    """What a window's score reads instead of a pass of its own (recipe/scoring.py): each of the winner's tokens'
    log-probability under the rules, which added in float32 give its sum."""
    rules = LogitRules(suppress_tokens=(3,), begin_suppress_tokens=(EOS,), begin_index=2)
    for seed in range(4):
        model = random_model(seed)
        outcome = generate_beams(TableTarget(model, 1), [[0, 1]], [settings(beam, 12, rules)])[0]
        assert len(outcome.log_probs) == len(outcome.tokens) > 0
        sequence, total = [0, 1], torch.tensor(0.0)
        for token, value in zip(outcome.tokens, outcome.log_probs):
            log_probs = torch.log_softmax(rules.apply(model(sequence)[None], len(sequence), sequence)[0].float(), -1)
            assert value == float(log_probs[token]), seed
            total = total + log_probs[token]
            sequence.append(token)
        assert float(total) == outcome.sum_logprob, seed
