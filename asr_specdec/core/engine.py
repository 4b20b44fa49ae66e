"""The one decoding loop: draft, verify in one main pass, accept, repeat.

Every mode runs through `generate`: plain decoding is the same loop with no drafter (each round feeds one
token and picks one), so plain and speculative share their prompt handling, logit rules, stopping rules
and telemetry, and any difference in output can only come from the drafter, which verification rules out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from .beam import BeamSearch, beam_search_batch
from .draft_length import DraftLength
from .drafter import Drafter
from .logits import LogitRules, Sampling, greedy_by_mask
from .stats import DecodeStats
from .target import Target, as_rows_target
from .verify import verify_greedy_choices, verify_sampling


@dataclass
class GenerationSettings:
    eos_token_id: int
    max_new_tokens: int = 448
    rules: LogitRules = field(default_factory=LogitRules)
    sampling: Sampling = field(default_factory=Sampling)
    draft_length: DraftLength = field(default_factory=DraftLength)
    # called with the sequence after each round; True ends generation (e.g. a stop string was produced)
    stop: Callable[[list[int]], bool] | None = None
    beam: BeamSearch | None = None  # beam search (beam.py) instead of greedy choices or sampling


@dataclass
class _Row:
    """One sequence in the batch: its tokens, its own settings, draft length and telemetry."""

    prompt: list[int]
    settings: GenerationSettings
    draft_length: DraftLength
    limit: int
    sequence: list[int] = field(default_factory=list)
    fed: int = 0  # positions the target holds for `sequence`: 0 before round one, then all but the last
    stats: DecodeStats = field(default_factory=DecodeStats)

    def room(self) -> int:
        return self.limit - len(self.sequence)


def generate(
    target: Target,
    prompt: list[int],
    settings: GenerationSettings,
    drafter: Drafter | None = None,
    generator: torch.Generator | None = None,
) -> tuple[list[int], DecodeStats]:
    """Generate after `prompt` (which the target has not seen). Returns (new tokens, stats); the new tokens
    end with the end-of-sequence token when the model produced it. A batch of one row."""
    if not prompt:
        raise ValueError("the prompt must hold at least one token")
    return generate_batch(target, [prompt], settings, drafter, generator)[0]


def generate_batch(
    target: Target,
    prompts: list[list[int]],
    settings: GenerationSettings | list[GenerationSettings],
    drafter: Drafter | None = None,
    generator: torch.Generator | None = None,
) -> list[tuple[list[int], DecodeStats]]:
    """Generate after each prompt, row b in batch row b of the target (and of the drafter). Every round each
    row drafts, is verified and accepts its own number of tokens; a row that ends drops out of the batch.
    `settings` may differ per row (a list). Returns (new tokens, stats) per row; the times in a row's stats
    are its share of each batched pass, so that they add up to the batch's time."""
    if not prompts or any(not prompt for prompt in prompts):
        raise ValueError("every prompt must hold at least one token")
    per_row = settings if isinstance(settings, list) else [settings] * len(prompts)
    if any(row.beam is not None for row in per_row):
        return [(outcome.tokens, outcome.stats) for outcome in generate_beams(target, prompts, per_row, drafter)]
    rows = [_Row(list(prompt), row_settings, row_settings.draft_length.copy(),
                 min(len(prompt) + row_settings.max_new_tokens, target.max_positions), list(prompt))
            for prompt, row_settings in zip(prompts, per_row, strict=True)]
    target = as_rows_target(target)
    started = time.perf_counter()
    active = _drop(list(range(len(rows))), [rows[index].room() <= 0 for index in range(len(rows))], target, drafter)
    while active:
        batch = [rows[index] for index in active]
        draft_started = time.perf_counter()
        drafts, draft_probs = _draft(drafter, batch)
        verify_started = time.perf_counter()
        feeds = [row.sequence[row.fed:] + draft for row, draft in zip(batch, drafts)]
        starts, scored = [row.fed for row in batch], [len(draft) + 1 for draft in drafts]
        if _greedy_choices_suffice(target, batch):
            rules = [(row.settings.rules, len(row.sequence), row.sequence + draft) for row, draft in zip(batch, drafts)]
            choices = target.greedy_rows(feeds, starts, scored, rules)
            verdicts = [verify_greedy_choices(draft, row_choices) for draft, row_choices in zip(drafts, choices)]
        else:
            logits = target.extend_rows(feeds, starts, scored)
            verdicts = [_verify_scores(row, draft, probs, row_logits, generator)
                        for row, draft, probs, row_logits in zip(batch, drafts, draft_probs, logits)]
        verify_seconds = time.perf_counter() - verify_started
        timings = (verify_started - draft_started, verify_seconds)
        # sampled rows adapt to acceptance only: a seeded run must draw the same random numbers every time
        outcomes = [_accept(row, draft, *verdict, (0.0, 0.0) if row.settings.sampling.do_sample else timings)
                    for row, draft, verdict in zip(batch, drafts, verdicts)]
        _share(batch, "verify_seconds", verify_seconds)
        for row, (_, done) in zip(batch, outcomes):
            if done:
                row.stats.total_seconds = time.perf_counter() - started
        active = _drop(active, [done for _, done in outcomes], target, drafter)
    results = []
    for row in rows:
        row.stats.new_tokens = len(row.sequence) - len(row.prompt)
        results.append((row.sequence[len(row.prompt):], row.stats))
    return results


def generate_beams(target: Target, prompts: list[list[int]], settings: list[GenerationSettings],
                   drafter: Drafter | None = None, held: list[list[int]] | None = None) -> list:
    """Beam search after each prompt (every row's settings with `beam`, no sampling): one BeamOutcome per row,
    with its candidates and sums of log-probabilities; speculative when a drafter is given, with the same result.
    `held`: the tokens the target's row b already holds from position 0 (a start of prompt b), not fed again."""
    if any(row.beam is None or row.sampling.do_sample for row in settings):
        raise ValueError("beam search rows cannot share a batch with greedy or sampled rows, nor sample")
    if not hasattr(target, "copy_positions"):
        raise ValueError(f"{type(target).__name__} cannot move keys and values between rows: no beam search")
    return beam_search_batch(target, prompts, settings, drafter, held)


def _drop(active: list[int], finished: list[bool], target, drafter) -> list[int]:
    """The rows still active; the finished ones leave the target's (and the drafter's) batch."""
    if not any(finished):
        return active
    kept = [slot for slot, done in enumerate(finished) if not done]
    if kept:
        memo: dict = {}  # caches that share tensors (a drafter reading the main cross-attention) stay sharing
        # slot numbers are host-side bookkeeping: each cache moves them to its own tensors' device
        rows = torch.tensor(kept, device="cpu")
        target.keep(rows, memo)
        if drafter is not None:
            drafter.keep(rows, memo)
    return [active[slot] for slot in kept]


def _share(batch: list[_Row], name: str, seconds: float) -> None:
    for row in batch:
        setattr(row.stats, name, getattr(row.stats, name) + seconds / len(batch))


def _draft(drafter, batch: list[_Row]) -> tuple[list[list[int]], list]:
    """Each row's draft (capped so that the row's verification stays within its length limit) and the
    distributions it was sampled from (None for deterministic drafts)."""
    if drafter is None:
        return [[] for _ in batch], [None] * len(batch)
    wanted = [min(row.draft_length.tokens, row.room() - 1) if row.room() > 1 else 0 for row in batch]
    draft_started = time.perf_counter()
    proposals = drafter.draft_rows([row.sequence for row in batch], wanted)
    _share(batch, "draft_seconds", time.perf_counter() - draft_started)
    drafts, probs = [], []
    for row, proposal, cap in zip(batch, proposals, wanted):
        tokens = proposal.tokens[:cap]
        drafts.append(tokens)
        probs.append(proposal.probs[: len(tokens)] if proposal.probs is not None else None)
        row.stats.draft_passes += proposal.forward_passes
    return drafts, probs


def _greedy_choices_suffice(target, batch: list[_Row]) -> bool:
    """Whether the main model's greedy choices alone verify this round (no sampling, no rule that needs the
    full logits), so the target may pick them without computing every logit (see argmax.py)."""
    return hasattr(target, "greedy_rows") and all(
        not row.settings.sampling.do_sample and greedy_by_mask(row.settings.rules) for row in batch)


def _verify_scores(row: _Row, draft: list[int], draft_probs, logits: torch.Tensor, generator) -> tuple[int, int]:
    """(accepted count, the main model's next token) for one row's draft, from the main model's logits."""
    settings, sequence = row.settings, row.sequence
    scores = settings.rules.apply(logits, len(sequence), sequence + draft)
    if settings.sampling.do_sample:
        return verify_sampling(draft, draft_probs, settings.sampling.probabilities(scores), generator)
    return verify_greedy_choices(draft, scores.argmax(dim=-1).tolist())


def _accept(row: _Row, draft: list[int], accepted: int, next_token: int,
            timings: tuple[float, float] = (0.0, 0.0)) -> tuple[int, bool]:
    """Append the accepted draft tokens and the main model's own next token to the row; say (accepted count,
    whether the row has ended). `timings`: the round's (drafting, verification) seconds, for the draft length."""
    settings, sequence = row.settings, row.sequence
    stats = row.stats
    stats.main_passes += 1
    stats.drafted_tokens += len(draft)
    stats.accepted_tokens += accepted
    new_tokens = draft[:accepted] + [next_token]
    from_draft = [True] * accepted + [False]
    if settings.eos_token_id in new_tokens:
        end = new_tokens.index(settings.eos_token_id) + 1
        new_tokens, from_draft = new_tokens[:end], from_draft[:end]
    sequence.extend(new_tokens)
    row.fed = len(sequence) - 1
    stats.token_from_draft.extend(from_draft)
    row.draft_length.update(len(draft), accepted, *timings)
    done = (sequence[-1] == settings.eos_token_id or row.room() <= 0
            or (settings.stop is not None and settings.stop(sequence)))
    return accepted, done
