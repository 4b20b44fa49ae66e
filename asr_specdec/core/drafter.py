"""The drafter interface: every drafting idea is one class behind it; the engine never knows which."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from .logits import LogitRules, Sampling


@dataclass
class Draft:
    tokens: list[int]
    # [len(tokens), vocab] distributions the tokens were drawn from (sampling with a model drafter);
    # None when the draft is deterministic (greedy, n-gram lookup, cross-tokenizer drafts)
    probs: torch.Tensor | None = None
    forward_passes: int = 0


@dataclass
class DraftContext:
    """What a drafter may use for one utterance: rules and sampling shared with the main model, and for
    Whisper drafters the main model's encoder output (and cross-attention states) to share."""

    rules: LogitRules
    sampling: Sampling
    max_positions: int
    eos_token_id: int
    generator: torch.Generator | None = None
    encoder_output: torch.Tensor | None = None
    input_features: torch.Tensor | None = None
    main_cache: object | None = None  # the main model's KV cache, for drafters that share its layers
    main_cross_states: tuple | None = None
    row_rules: list[LogitRules] | None = None  # per batch row, where rows differ (else `rules` for all)
    row_sampling: list[Sampling] | None = None  # per batch row, where rows differ (else `sampling` for all)


class Drafter(ABC):
    """Proposes tokens that the main model then verifies.

    `draft` receives the whole current sequence (prompt + accepted tokens) every round; a drafter with a
    model keeps its own cache and syncs it to that sequence, so rollback after a rejection is the
    drafter's own business and the engine stays generic. The engine asks for a batch of rows at once
    (`draft_rows`); row b is batch row b of the context's encoder output, and `keep` follows the engine when
    finished rows leave the batch.
    """

    name: str = "drafter"
    uses_model: bool = True

    def start(self, context: DraftContext) -> None:
        """Called once per utterance before the first draft."""
        self.context = context

    @abstractmethod
    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        """Propose up to `max_tokens` tokens to follow `sequence`."""

    def draft_rows(self, sequences: list[list[int]], max_tokens: list[int]) -> list[Draft]:
        """A draft for every row of the batch (row by row unless a drafter batches its model)."""
        return [self.draft(sequence, limit) if limit > 0 else Draft(tokens=[])
                for sequence, limit in zip(sequences, max_tokens)]

    def keep(self, rows: torch.Tensor, memo: dict) -> None:
        """Only batch rows `rows` go on (the others finished); `memo` as in KVCache.keep."""
