"""The hypothesis drafter on tiny random Whisper models with timestamps: whatever the previous hypothesis says
(right, reworded, cut short, garbage or nothing) and whatever the fallback, the tokens are plain greedy's."""

from __future__ import annotations

import random

import pytest

from asr_specdec.core.drafter import DraftContext
from asr_specdec.core.hypothesis import PROBE_TOKENS, HypothesisDrafter
from asr_specdec.core.logits import LogitRules, Sampling
from asr_specdec.core.prompt_lookup import PromptLookupDrafter
from asr_specdec.whisper.drafters import QuantizedSelfDrafter

from ..tiny_longform import EOS, VOCAB, long_features, timestamp_whisper, window_decoder

FALLBACKS = {
    "none": lambda model: None,
    "quantized-self": lambda model: QuantizedSelfDrafter(model),
    "prompt-lookup": lambda model: PromptLookupDrafter(),
}


def variants(plain: list[int], seed: int) -> dict[str, list[int]]:
    """Previous hypotheses a live decode may meet, made from the tokens it will generate."""
    rng = random.Random(seed)
    body = [token for token in plain if token != EOS]
    middle = len(body) // 2
    return {
        "exact": body,
        "with eos": list(plain),
        "reworded": body[:middle] + [(body[middle] + 1) % EOS] + body[middle + 1:],
        "word inserted": body[:middle] + [rng.randrange(EOS)] + body[middle:],
        "word dropped": body[:middle] + body[middle + 1:],
        "word doubled": body[:middle + 1] + body[middle:],
        "two words changed": body[:middle] + [(token + 1) % EOS for token in body[middle:middle + 2]]
        + body[middle + 2:],
        "start dropped": body[3:],
        "phrase said early": body[middle:middle + 3] + body,
        "cut short": body[:middle],
        "runs on": body + [rng.randrange(VOCAB) for _ in range(10)],
        "garbage": [rng.randrange(VOCAB) for _ in range(len(body))],
        "nothing": [],
    }


@pytest.fixture(scope="module")
def cases():
    """(model, window features, previous text, plain tokens) for a few tiny models and windows."""
    found = []
    for seed in range(2):
        model = timestamp_whisper(seed)
        decode = window_decoder(model)
        for window_seed, previous in ((seed, None), (seed + 10, [5, 6, 9, 11])):
            window = long_features(window_seed, frames=32)
            found.append((model, window, previous, decode(window, previous)))
    return found


@pytest.mark.parametrize("fallback", FALLBACKS)
def test_every_hypothesis_gives_plain_greedy_tokens(cases, fallback):
    for index, (model, window, previous, plain) in enumerate(cases):
        drafter = HypothesisDrafter(FALLBACKS[fallback](model), fallback_tokens=3)
        decode = window_decoder(model, lambda drafter=drafter: drafter, draft_tokens=16)
        for name, hypothesis in variants(plain, index).items():
            drafter.expect(hypothesis)
            assert decode(window, previous) == plain, (index, name)


def test_the_exact_hypothesis_is_accepted_whole_in_few_passes(cases):
    for model, window, previous, plain in cases:
        drafter = HypothesisDrafter(None)
        stats = []
        decode = window_decoder(model, lambda drafter=drafter: drafter, draft_tokens=64, stats=stats)
        drafter.expect(plain)
        assert decode(window, previous) == plain
        usage = drafter.usage(plain)
        # end-of-text included (it was in the hypothesis); at the length limit the last token is the main model's
        assert usage.hypothesis_accepted == len(plain) - (plain[-1] != EOS)
        assert stats[-1].main_passes == 1 and usage.fallback_drafted == 0


def test_a_reworded_token_costs_one_correction_and_drafting_goes_on(cases):
    model, window, previous, plain = max(cases, key=lambda case: len(case[3]))
    drafter = HypothesisDrafter(None)
    stats = []
    decode = window_decoder(model, lambda: drafter, draft_tokens=64, stats=stats)
    drafter.expect(variants(plain, 0)["reworded"])
    assert decode(window, previous) == plain
    usage = drafter.usage(plain)
    # everything but the reworded token comes from the hypothesis, re-found after the main model's correction
    assert usage.hypothesis_accepted >= len(plain) - 3
    assert stats[-1].main_passes <= 3


def one_row_context(begin: int) -> DraftContext:
    return DraftContext(rules=LogitRules(begin_index=begin), sampling=Sampling(), max_positions=64, eos_token_id=EOS)


class Recorder(PromptLookupDrafter):
    """A fallback that proposes fixed tokens and records the limits it was given."""

    def __init__(self):
        super().__init__()
        self.limits = []

    def draft(self, sequence, max_tokens):
        self.limits.append(max_tokens)
        from asr_specdec.core.drafter import Draft

        return Draft(tokens=[7] * max_tokens)


def test_drafts_follow_the_hypothesis_after_the_prompt_then_the_fallback():
    fallback = Recorder()
    drafter = HypothesisDrafter(fallback, fallback_tokens=2)
    drafter.expect([1, 2, 3, 4])
    drafter.start(one_row_context(begin=3))
    prompt = [50, 51, 52]
    assert drafter.draft(prompt, 3).tokens == [1, 2, 3]
    assert drafter.draft(prompt + [1, 2, 3, 4], 8).tokens == [7, 7]  # past its end: the fallback, capped
    assert fallback.limits == [2]
    # a new decode starts from the top of the new hypothesis
    drafter.expect([9, 8])
    drafter.start(one_row_context(begin=3))
    assert drafter.draft(prompt, 8).tokens == [9, 8]


def test_after_a_hypothesis_draft_that_was_all_rejected_the_fallback_drafts_once():
    fallback = Recorder()
    drafter = HypothesisDrafter(fallback, fallback_tokens=2)
    drafter.expect([1, 2, 3, 4, 5, 6])
    drafter.start(one_row_context(begin=1))
    assert drafter.draft([0], 4).tokens == [1, 2, 3, 4]
    # the main model said 9 where the hypothesis said 1: the fallback's turn
    assert drafter.draft([0, 9], 4).tokens == [7, 7]
    # then the hypothesis again, found by its last tokens: after "2" (the nearest place) comes 3
    assert drafter.draft([0, 9, 7, 2], 4).tokens == [3, 4, 5, 6]
    usage = drafter.usage([9, 7, 2, 3, 4, 5, 6])
    assert (usage.hypothesis_drafted, usage.hypothesis_accepted) == (8, 4)
    assert (usage.fallback_drafted, usage.fallback_accepted) == (2, 1)


def test_once_the_hypothesis_was_followed_to_its_end_only_the_fallback_drafts():
    fallback = Recorder()
    drafter = HypothesisDrafter(fallback, fallback_tokens=2)
    drafter.expect([1, 2, 3, 4, 5])
    drafter.start(one_row_context(begin=1))
    assert drafter.draft([0, 1, 2, 3, 4, 5], 4).tokens == [7, 7]  # its end: the new audio's tail begins
    # the new text happens to end like an earlier part of the hypothesis ("1 2"): still not the hypothesis's
    assert drafter.draft([0, 1, 2, 3, 4, 5, 9, 1, 2], 4).tokens == [7, 7]
    # a new decode follows its new hypothesis again
    drafter.expect([1, 2, 3])
    drafter.start(one_row_context(begin=1))
    assert drafter.draft([0, 1], 4).tokens == [2, 3]


def started_drafter(hypothesis: list[int]) -> HypothesisDrafter:
    """A drafter expecting `hypothesis`, started on one row after a one-token prompt."""
    drafter = HypothesisDrafter(None)
    drafter.expect(hypothesis)
    drafter.start(one_row_context(begin=1))
    return drafter


def test_a_changed_token_is_probed_briefly_then_the_hypothesis_drafts_long_again():
    hypothesis = list(range(1, 41))
    drafter = started_drafter(hypothesis)
    assert drafter.draft([0], 64).tokens == hypothesis
    # the main model said 99 for 11: a substitution or an insertion, a guess, so only a short probe follows it
    generated = hypothesis[:10] + [99]
    assert drafter.draft([0, *generated], 64).tokens == hypothesis[11:11 + PROBE_TOKENS]
    # the probe was right: in step again, the rest in one long draft
    generated += hypothesis[11:11 + PROBE_TOKENS] + [hypothesis[11 + PROBE_TOKENS]]
    assert drafter.draft([0, *generated], 64).tokens == hypothesis[len(generated):]


def test_a_dropped_token_is_probed_one_place_on():
    hypothesis = list(range(1, 41))
    drafter = started_drafter(hypothesis)
    drafter.draft([0], 64)
    generated = hypothesis[:10] + [12]  # 11 left out
    assert drafter.draft([0, *generated], 64).tokens == hypothesis[12:12 + PROBE_TOKENS]


def test_tokens_found_far_from_the_expected_place_are_only_probed():
    # the main model says "5 6 7", which the hypothesis has early, where the hypothesis had 29 30 31
    hypothesis = list(range(1, 41))
    drafter = started_drafter(hypothesis)
    drafter.draft([0], 64)
    generated = hypothesis[:28] + [5]
    assert drafter.draft([0, *generated], 64).tokens == hypothesis[29:29 + PROBE_TOKENS]  # a guess after a change
    generated += [6]
    assert drafter.draft([0, *generated], 64).tokens == []  # nothing of it was taken: the next guess waits a round
    generated += [7]
    assert drafter.draft([0, *generated], 64).tokens == hypothesis[7:7 + PROBE_TOKENS]
    # found again near where it was expected, by two tokens: certain, a long draft
    generated += [8, 29, 30]
    assert drafter.draft([0, *generated], 64).tokens == hypothesis[30:]
