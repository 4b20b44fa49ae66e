"""The one decoding loop: draft, verify in one main pass, accept, repeat.

Every mode runs through `generate`: plain decoding is the same loop with no drafter (each round feeds one
token and picks one), so plain and speculative share their prompt handling, logit rules, stopping rules
and telemetry, and any difference in output can only come from the drafter, which verification rules out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import torch

from .draft_length import DraftLength
from .drafters.base import Drafter
from .logits import LogitRules, Sampling
from .stats import DecodeStats
from .verify import verify_greedy, verify_sampling


class Target(Protocol):
    """The main model as the loop sees it: a decoder with a KV cache addressed by position."""

    max_positions: int

    def extend(self, token_ids: list[int], start: int, scored: int | None = None) -> torch.Tensor:
        """Feed tokens at positions start.. (overwriting anything cached there); logits [scored, vocab] of the
        last `scored` of them (all when None): rows nobody reads are not projected onto the vocabulary."""


@dataclass
class GenerationSettings:
    eos_token_id: int
    max_new_tokens: int = 448
    rules: LogitRules = field(default_factory=LogitRules)
    sampling: Sampling = field(default_factory=Sampling)
    draft_length: DraftLength = field(default_factory=DraftLength)
    # called with the sequence after each round; True ends generation (e.g. a stop string was produced)
    stop: Callable[[list[int]], bool] | None = None


def generate(
    target: Target,
    prompt: list[int],
    settings: GenerationSettings,
    drafter: Drafter | None = None,
    generator: torch.Generator | None = None,
) -> tuple[list[int], DecodeStats]:
    """Generate after `prompt` (which the target has not seen). Returns (new tokens, stats); the new tokens
    end with the end-of-sequence token when the model produced it."""
    if not prompt:
        raise ValueError("the prompt must hold at least one token")
    stats = DecodeStats()
    started = time.perf_counter()
    draft_length = DraftLength(settings.draft_length.tokens, settings.draft_length.dynamic,
                               settings.draft_length.minimum, settings.draft_length.maximum)
    sequence = list(prompt)
    limit = min(len(prompt) + settings.max_new_tokens, target.max_positions)
    fed = 0  # positions whose keys/values the target holds for `sequence`: all but the last after round one

    while len(sequence) < limit:
        room = limit - len(sequence)
        draft_tokens, draft_probs = [], None
        if drafter is not None and room > 1:
            draft_started = time.perf_counter()
            draft = drafter.draft(sequence, min(draft_length.tokens, room - 1))
            stats.draft_seconds += time.perf_counter() - draft_started
            stats.draft_passes += draft.forward_passes
            draft_tokens = draft.tokens[: room - 1]
            if draft.probs is not None:
                draft_probs = draft.probs[: len(draft_tokens)]

        verify_started = time.perf_counter()
        logits = target.extend(sequence[fed:] + draft_tokens, fed, scored=len(draft_tokens) + 1)
        scores = settings.rules.apply(logits, len(sequence), sequence + draft_tokens)
        if settings.sampling.do_sample:
            main_probs = settings.sampling.probabilities(scores)
            accepted, next_token = verify_sampling(draft_tokens, draft_probs, main_probs, generator)
        else:
            accepted, next_token = verify_greedy(draft_tokens, scores)
        stats.verify_seconds += time.perf_counter() - verify_started
        stats.main_passes += 1
        stats.drafted_tokens += len(draft_tokens)
        stats.accepted_tokens += accepted

        new_tokens = draft_tokens[:accepted] + [next_token]
        from_draft = [True] * accepted + [False]
        if settings.eos_token_id in new_tokens:
            end = new_tokens.index(settings.eos_token_id) + 1
            new_tokens, from_draft = new_tokens[:end], from_draft[:end]
        sequence.extend(new_tokens)
        fed = len(sequence) - 1
        stats.token_from_draft.extend(from_draft)
        if drafter is not None and draft_tokens:
            drafter.feedback(len(draft_tokens), accepted)
        draft_length.update(len(draft_tokens), accepted)
        if sequence[-1] == settings.eos_token_id or (settings.stop and settings.stop(sequence)):
            break

    stats.new_tokens = len(sequence) - len(prompt)
    stats.total_seconds = time.perf_counter() - started
    return sequence[len(prompt):], stats
