"""The main model as the engine sees it, and a one-row view of a target that decodes one sequence at a time."""

from __future__ import annotations

from typing import Protocol

import torch


class Target(Protocol):
    """The main model as the loop sees it: a decoder with a KV cache addressed by position."""

    max_positions: int

    def extend(self, token_ids: list[int], start: int, scored: int | None = None) -> torch.Tensor:
        """Feed tokens at positions start.. (overwriting anything cached there); logits [scored, vocab] of the
        last `scored` of them (all when None): rows nobody reads are not projected onto the vocabulary."""

    # A batched target also has extend_rows(feeds, starts, scored) and keep(rows, memo) (rows may repeat: a row
    # duplicated); beam search needs copy_positions(moves): for (source, destination, begin, end) row destination
    # takes row source's keys and values at positions begin..end-1, every move reading rows before any writes.


class _OneRow:
    """A target that feeds one sequence (`extend`) seen as a batch of one row."""

    def __init__(self, target: Target):
        self.target = target
        self.max_positions = target.max_positions

    def extend_rows(self, feeds: list[list[int]], starts: list[int], scored: list[int]) -> list[torch.Tensor]:
        if len(feeds) != 1:
            raise ValueError(f"{type(self.target).__name__} decodes one sequence at a time, not {len(feeds)}")
        return [self.target.extend(feeds[0], starts[0], scored=scored[0])]

    def keep(self, rows: torch.Tensor, memo: dict) -> None:
        if len(rows):
            raise ValueError("a one-row target cannot keep rows")


def as_rows_target(target):
    """`target` itself when it decodes batches of rows (`extend_rows`), else a one-row view of it."""
    return target if hasattr(target, "extend_rows") else _OneRow(target)
