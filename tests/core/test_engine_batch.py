"""Batched speculative decoding on tiny random Whisper models: every row of a batch gets exactly the tokens
that row gets decoded alone by plain greedy, whatever the drafter, with ragged lengths, rows ending early
(end-of-text, their own length limits) and rows dropping out of the batch mid-way."""

from __future__ import annotations

import pytest
import torch

from asr_specdec.core.draft_length import DraftLength
from asr_specdec.core.drafter import DraftContext
from asr_specdec.core.engine import GenerationSettings, generate_batch
from asr_specdec.core.logits import Sampling
from asr_specdec.whisper.runtime.decoder import DecoderTarget, WhisperDecoderRunner

from ..tiny_whisper import EOS, encoder_output
from .test_engine import DRAFTERS, MAIN, PROMPT, RULES, eos_seen_midway, run


def batch_target(model, seeds, drafter=None, *, eos=EOS, row_rules=None) -> DecoderTarget:
    """A batch of the seeds' 'audio' as the engine's target, `drafter` (if any) started on it. Call under
    inference mode."""
    features = torch.cat([encoder_output(model, seed)[0] for seed in seeds])
    runner = WhisperDecoderRunner(model)
    # per-row encoder outputs, so each row's encoder bits equal those of the row decoded alone
    encoded = torch.cat([encoder_output(model, seed)[1] for seed in seeds])
    cross = runner.cross_attention_states(encoded)
    cache = runner.new_cache(encoded, cross_states=cross)
    if drafter is not None:
        drafter.start(DraftContext(rules=RULES, sampling=Sampling(), max_positions=cache.max_positions,
                                   eos_token_id=eos, encoder_output=encoded, input_features=features,
                                   main_cache=cache, main_cross_states=cross, row_rules=row_rules))
    return DecoderTarget(runner, cache)


def run_batch(model, drafter_factory, seeds, *, eos=EOS, draft_tokens=4, dynamic=False, max_new_tokens=None):
    """Rows decode seeds' 'audio' together; max_new_tokens may differ per row."""
    max_new_tokens = max_new_tokens or [60] * len(seeds)
    settings = [GenerationSettings(eos_token_id=eos, max_new_tokens=limit, rules=RULES,
                                   draft_length=DraftLength(draft_tokens, dynamic=dynamic))
                for limit in max_new_tokens]
    drafter = drafter_factory() if drafter_factory else None
    with torch.inference_mode():
        target = batch_target(model, seeds, drafter, eos=eos)
        return generate_batch(target, [PROMPT] * len(seeds), settings, drafter)


@pytest.mark.parametrize("name", [None, *DRAFTERS])
@pytest.mark.parametrize("draft_tokens", [1, 5])
def test_every_row_equals_that_row_alone(name, draft_tokens):
    seeds = [0, 1, 2, 3, 4]
    limits = [60, 9, 60, 3, 25]  # rows end at their own limits mid-batch
    batch = run_batch(MAIN, DRAFTERS.get(name), seeds, draft_tokens=draft_tokens, max_new_tokens=limits)
    for seed, limit, (tokens, stats) in zip(seeds, limits, batch):
        alone, _ = run(MAIN, None, seed, max_new_tokens=limit)
        assert tokens == alone, (name, seed)
        assert stats.new_tokens == len(alone) and len(stats.token_from_draft) == len(alone)


@pytest.mark.parametrize("name", DRAFTERS)
@pytest.mark.parametrize("batch_seed", range(3))
def test_rows_ending_at_end_of_text_at_different_rounds(name, batch_seed):
    generator = torch.Generator().manual_seed(batch_seed)
    seeds = torch.randperm(8, generator=generator)[:4].tolist()
    eos = eos_seen_midway(MAIN, seeds[0])  # ends row 0 early; the other rows at their own places, or never
    batch = run_batch(MAIN, DRAFTERS[name], seeds, eos=eos, draft_tokens=3, dynamic=True)
    for seed, (tokens, _) in zip(seeds, batch):
        alone, _ = run(MAIN, None, seed, eos=eos)
        assert tokens == alone, (name, seed)
    assert batch[0][0][-1] == eos and len(batch[0][0]) < 60


def test_acceptance_is_per_row():
    # the same model as drafter accepts everything; each row keeps its own count, no row waits for another
    batch = run_batch(MAIN, DRAFTERS["assistant-self"], [0, 1, 2], draft_tokens=4, max_new_tokens=[30, 5, 17])
    for _, stats in batch:
        assert stats.acceptance_rate == 1.0
        assert stats.tokens_per_main_pass > 3
        assert sum(stats.token_from_draft) == stats.accepted_tokens


def test_a_row_with_no_room_leaves_at_once():
    batch = run_batch(MAIN, DRAFTERS["quantized-self"], [0, 1], max_new_tokens=[0, 6])
    assert batch[0][0] == []
    assert batch[1][0] == run(MAIN, None, 1, max_new_tokens=6)[0]


def test_rows_keep_their_own_rules_after_others_leave():
    from asr_specdec.core.logits import LogitRules

    # row 1 may never say token 9; once row 0 leaves, row 1's rules must still be row 1's own
    rules = [RULES, LogitRules(suppress_tokens=(3, 7, 9), begin_suppress_tokens=(EOS, 5), begin_index=len(PROMPT))]
    drafter = DRAFTERS["assistant-self"]()
    with torch.inference_mode():
        target = batch_target(MAIN, [0, 1], drafter, row_rules=rules)
        settings = [GenerationSettings(eos_token_id=EOS, max_new_tokens=limit, rules=row_rules,
                                       draft_length=DraftLength(4)) for limit, row_rules in zip([3, 40], rules)]
        batch = generate_batch(target, [PROMPT] * 2, settings, drafter)
    assert 9 not in batch[1][0]
    # the drafter is the main model itself: with the right rules it proposes exactly what is accepted
    assert batch[1][1].acceptance_rate == 1.0
