"""How many tokens to draft each round: fixed, or the dynamic +2/-1 schedule transformers uses."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DraftLength:
    tokens: int = 5
    dynamic: bool = False
    minimum: int = 1
    maximum: int = 16

    def __post_init__(self):
        if self.tokens < 1:
            raise ValueError("the number of draft tokens must be at least 1")

    def update(self, drafted: int, accepted: int) -> None:
        if not self.dynamic or drafted == 0:
            return
        if accepted == drafted:
            self.tokens = min(self.maximum, self.tokens + 2)
        else:
            self.tokens = max(self.minimum, self.tokens - 1)
