"""The drafter interface: every drafting idea is one class behind it; the engine never knows which."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from ..logits import LogitRules, Sampling


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


class Drafter(ABC):
    """Proposes tokens that the main model then verifies.

    `draft` receives the whole current sequence (prompt + accepted tokens) every round; a drafter with a
    model keeps its own cache and syncs it to that sequence, so rollback after a rejection is the
    drafter's own business and the engine stays generic.
    """

    name: str = "drafter"
    uses_model: bool = True

    def start(self, context: DraftContext) -> None:
        """Called once per utterance before the first draft."""
        self.context = context

    @abstractmethod
    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        """Propose up to `max_tokens` tokens to follow `sequence`."""

    def feedback(self, drafted: int, accepted: int) -> None:
        """Told after each verification how many drafted tokens were accepted."""
