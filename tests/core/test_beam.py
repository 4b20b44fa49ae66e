"""Beam search (core/beam.py) on a model whose scores are set by hand: openai-whisper's semantics (candidates,
patience, length penalty, finalize), checked by hand and against a direct transcription of openai's loop; the
speculative search equals plain beam search whatever the drafts; cache rows move without mixing beams up."""

from __future__ import annotations

import math
import random

import pytest
import torch

from asr_specdec.core.beam import BeamSearch
from asr_specdec.core.drafter import Draft, Drafter
from asr_specdec.core.engine import GenerationSettings, generate_batch, generate_beams
from asr_specdec.core.logits import LogitRules

EOS, VOCAB = 9, 10


class TableTarget:
    """Logits as a function of the whole token sequence; every row keeps the tokens fed at its positions, so a
    beam read from a row holding another beam's tokens gets the wrong logits (row moves are checked too)."""

    max_positions = 40

    def __init__(self, logits_of, rows: int):
        self.logits_of = logits_of
        self.rows = [[] for _ in range(rows)]
        self.passes = 0

    def extend_rows(self, feeds, starts, scored):
        self.passes += 1
        out = []
        for row, (feed, start, count) in enumerate(zip(feeds, starts, scored)):
            held = self.rows[row]
            assert start <= len(held), "a row fed past what it holds"
            self.rows[row] = held[:start] + list(feed)
            sequence = self.rows[row]
            out.append(torch.stack([self.logits_of(sequence[:len(sequence) - count + index + 1])
                                    for index in range(count)]) if count else torch.empty(0, VOCAB))
        return out

    def keep(self, rows, memo):
        self.rows = [list(self.rows[row]) for row in rows.tolist()]

    def copy_positions(self, moves):
        before = [list(row) for row in self.rows]
        for source, destination, begin, end in moves:
            assert before[destination][:begin] == before[source][:begin], "positions before begin differ"
            self.rows[destination] = before[source][:end]


def random_model(seed: int, eos_bias: float = -1.0):
    """Deterministic pseudo-random logits per sequence (peaked, so beams share prefixes and end)."""
    def logits_of(sequence):
        generator = torch.Generator().manual_seed(hash((seed, tuple(sequence))) % (2 ** 31))
        logits = torch.randn(VOCAB, generator=generator) * 3
        logits[EOS] += eos_bias + 0.4 * len(sequence)
        return logits
    return logits_of


def reference_beam_search(logits_of, prompt, beam: BeamSearch, rules: LogitRules, limit: int):
    """openai's BeamSearchDecoder.update / finalize and MaximumLikelihoodRanker, written out directly (k identical
    beams at the start, float32 sums, a dict of candidates)."""
    size = beam.beam_size
    tokens = [list(prompt) for _ in range(size)]
    sums = torch.zeros(size)
    finished = {}
    while True:
        scores, sources = {}, {}
        for index in range(size):
            logits = rules.apply(logits_of(tokens[index])[None], len(tokens[index]), tokens[index])[0]
            logprobs = torch.log_softmax(logits.float(), dim=-1)
            for logprob, token in zip(*logprobs.topk(size + 1)):
                sequence = tuple(tokens[index] + [int(token)])
                scores[sequence] = (sums[index] + logprob).item()
                sources[sequence] = index
        kept, newly = [], {}
        for sequence in sorted(scores, key=scores.get, reverse=True):
            if sequence[-1] == EOS:
                newly[sequence] = scores[sequence]
            else:
                sums[len(kept)] = scores[sequence]
                kept.append(list(sequence))
                if len(kept) == size:
                    break
        tokens = kept
        for sequence in sorted(newly, key=newly.get, reverse=True):
            if len(finished) >= beam.max_candidates:
                break
            finished[sequence] = newly[sequence]
        if len(finished) >= beam.max_candidates or len(tokens[0]) >= limit:
            break
    if len(finished) < size:
        for index in sorted(range(size), key=lambda item: -float(sums[item])):
            finished[tuple(tokens[index])] = sums[index].item()
            if len(finished) >= size:
                break
    ranked = [(sequence[len(prompt):], score) for sequence, score in finished.items()]
    scores = [beam.rank_score(score, len(tokens) - (tokens[-1:] == (EOS,))) for tokens, score in ranked]
    best = scores.index(max(scores))
    return list(ranked[best][0]), ranked[best][1]


def settings(beam: BeamSearch, limit: int = 20, rules: LogitRules | None = None) -> GenerationSettings:
    return GenerationSettings(eos_token_id=EOS, max_new_tokens=limit, rules=rules or LogitRules(), beam=beam)


def test_beam_search_finds_the_likelier_sequence_greedy_misses():
    # greedy takes 1 (p=0.5), then is unsure (0.1 for each token, end included); 2 (p=0.4) is followed by a sure end
    def logits_of(sequence):
        generated = sequence[1:]
        probabilities = torch.full((VOCAB,), 1e-9)
        if not generated:
            probabilities[1], probabilities[2], probabilities[4] = 0.5, 0.4, 0.1
        elif generated == [1]:
            probabilities[:] = 0.1
        else:
            probabilities[EOS] = 1.0
        return probabilities.log()

    greedy = generate_batch(TableTarget(logits_of, 1), [[0]], GenerationSettings(eos_token_id=EOS, max_new_tokens=5))
    assert greedy[0][0][:1] == [1]
    outcome = generate_beams(TableTarget(logits_of, 1), [[0]], [settings(BeamSearch(2))])[0]
    assert outcome.tokens == [2, EOS]
    assert outcome.sum_logprob == pytest.approx(math.log(0.4), abs=1e-5)
    # step 2 finishes [2, end] (log 0.4) and keeps [1, x], [1, y] (log 0.05); step 3 finishes [1, x, end]: two
    # candidates (patience 1), ranked by sum / length: log(0.4) / 1 beats log(0.05) / 2
    (first, first_sum), (second, second_sum) = outcome.candidates
    assert first == (2, EOS) and len(second) == 3 and second[0] == 1 and second[-1] == EOS
    assert second_sum == pytest.approx(math.log(0.05), abs=1e-5)


def test_length_penalty_and_patience_follow_openai():
    beam = BeamSearch(3, patience=2.0, length_penalty=0.5)
    assert beam.max_candidates == 6
    assert beam.rank_score(-3.0, 4) == pytest.approx(-3.0 / (9 / 6) ** 0.5)
    assert BeamSearch(3).rank_score(-3.0, 4) == pytest.approx(-0.75)
    for bad in ({"beam_size": 0}, {"patience": 0}, {"length_penalty": 2.0}):
        with pytest.raises(ValueError):
            BeamSearch(**{"beam_size": 2, **bad})


@pytest.mark.parametrize("beam", [BeamSearch(1), BeamSearch(2), BeamSearch(4), BeamSearch(3, patience=2.0),
                                  BeamSearch(5, length_penalty=1.0), BeamSearch(3, patience=0.5)])
def test_plain_beam_search_is_openais(beam):
    rules = LogitRules(suppress_tokens=(3,), begin_suppress_tokens=(EOS,), begin_index=2)
    for seed in range(6):
        model = random_model(seed)
        outcome = generate_beams(TableTarget(model, 1), [[0, 1]], [settings(beam, 12, rules)])[0]
        expected = reference_beam_search(model, [0, 1], beam, rules, 14)
        assert (outcome.tokens, outcome.sum_logprob) == expected, seed


class ScriptedDrafter(Drafter):
    """Drafts from a model's own greedy choices (always right), or random tokens, or a mix."""

    def __init__(self, logits_of, wrong: float, seed: int = 0):
        self.logits_of, self.wrong, self.random = logits_of, wrong, random.Random(seed)
        self.rows = 0

    def draft(self, sequence, max_tokens):
        tokens = []
        for _ in range(max_tokens):
            token = (self.random.randrange(VOCAB) if self.random.random() < self.wrong
                     else int(self.logits_of(sequence + tokens).argmax()))
            tokens.append(token)
            if token == EOS:
                break
        return Draft(tokens=tokens)


@pytest.mark.parametrize("wrong", [0.0, 0.3, 1.0])
def test_speculative_beam_search_equals_plain_whatever_the_drafts(wrong):
    from asr_specdec.core.draft_length import DraftLength

    prompts = [[0, 1], [0, 2, 4], [0, 3]]
    for seed in range(3):
        model = random_model(seed, eos_bias=-3.0)
        rows = [settings(BeamSearch(size), 16) for size in (3, 2, 5)]
        plain_target = TableTarget(model, len(prompts))
        plain = generate_beams(plain_target, prompts, rows)
        rows = [GenerationSettings(**{**row.__dict__, "draft_length": DraftLength(4)}) for row in rows]
        target = TableTarget(model, len(prompts))
        speculative = generate_beams(target, prompts, rows, ScriptedDrafter(model, wrong, seed))
        for alone, (prompt, row) in zip(plain, zip(prompts, rows)):
            assert generate_beams(TableTarget(model, 1), [prompt], [row])[0].tokens == alone.tokens
        for got, expected in zip(speculative, plain):
            assert (got.tokens, got.sum_logprob, got.candidates, got.log_probs) == (
                expected.tokens, expected.sum_logprob, expected.candidates, expected.log_probs)
            assert got.stats.beam_steps == expected.stats.beam_steps
        if wrong == 0.0:
            assert target.passes < plain_target.passes


# faster-whisper's repetition rules (core/logits.py), read per beam from that beam's own tokens
REPEATS = [LogitRules(suppress_tokens=(3,), begin_index=2, no_repeat_ngram_size=2),
           LogitRules(begin_suppress_tokens=(EOS,), begin_index=2, repetition_penalty=2.0),
           LogitRules(begin_index=2, repetition_penalty=0.6, no_repeat_ngram_size=1)]


@pytest.mark.parametrize("rules", REPEATS)
def test_beam_search_under_repetition_rules_is_openais_loop_with_them(rules):
    beam, changed = BeamSearch(3), 0
    for seed in range(6):
        model = random_model(seed, eos_bias=-3.0)
        outcome = generate_beams(TableTarget(model, 1), [[0, 1]], [settings(beam, 12, rules)])[0]
        assert (outcome.tokens, outcome.sum_logprob) == reference_beam_search(model, [0, 1], beam, rules, 14), seed
        changed += outcome.tokens != generate_beams(TableTarget(model, 1), [[0, 1]], [settings(beam, 12)])[0].tokens
    assert changed >= 3


@pytest.mark.parametrize("rules", REPEATS)
def test_speculative_beam_search_equals_plain_under_repetition_rules(rules):
    from asr_specdec.core.draft_length import DraftLength

    prompts = [[0, 1], [0, 1, 4]]
    for seed, wrong in ((0, 0.0), (1, 0.3), (2, 1.0)):
        model = random_model(seed, eos_bias=-3.0)
        rows = [settings(BeamSearch(size), 16, rules) for size in (3, 2)]
        plain = generate_beams(TableTarget(model, len(prompts)), prompts, rows)
        rows = [GenerationSettings(**{**row.__dict__, "draft_length": DraftLength(4)}) for row in rows]
        speculative = generate_beams(TableTarget(model, len(prompts)), prompts, rows,
                                     ScriptedDrafter(model, wrong, seed))
        for got, expected in zip(speculative, plain):
            assert (got.tokens, got.sum_logprob, got.candidates) == (expected.tokens, expected.sum_logprob,
                                                                     expected.candidates)
