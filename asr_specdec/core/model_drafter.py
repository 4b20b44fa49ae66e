"""Shared mechanics of drafters that run a model: sync its KV cache to each row's sequence, then step greedily
or by sampling, under the same logit rules as the main model, a batch of rows at a time."""

from __future__ import annotations

from dataclasses import replace

import torch

from .drafter import Draft, Drafter
from .logits import draw, greedy_by_mask
from .target import as_rows_target


class ModelDrafter(Drafter):
    """Drafts by running `self.target` (an engine target: `extend_rows`, or `extend` for one row) one token
    per step for every row still drafting.

    Subclasses set the target up in `start`. Its cache holds the drafter's keys/values for `self.cached[b]`
    tokens of row b; each draft first re-feeds whatever part of the row's sequence differs from them.
    """

    target: object

    def __init__(self, confidence_threshold: float = 0.0):
        self.confidence_threshold = confidence_threshold
        self.cached: list[list[int]] = []

    def start(self, context) -> None:
        super().start(context)
        self.cached = []

    def _common_prefix(self, sequence: list[int], cached: list[int]) -> int:
        limit = min(len(cached), len(sequence) - 1)
        for index in range(limit):
            if cached[index] != sequence[index]:
                return index
        return limit

    def _rules(self, row: int):
        row_rules = getattr(self.context, "row_rules", None)
        return row_rules[row] if row_rules else self.context.rules

    def _sampling(self, row: int):
        row_sampling = getattr(self.context, "row_sampling", None)
        return row_sampling[row] if row_sampling else self.context.sampling

    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        return self.draft_rows([sequence], [max_tokens])[0]

    def draft_rows(self, sequences: list[list[int]], max_tokens: list[int]) -> list[Draft]:
        target = as_rows_target(self.target)
        if not self.cached:
            self.cached = [[] for _ in sequences]
        limits = [0 if len(sequence) >= target.max_positions else limit
                  for sequence, limit in zip(sequences, max_tokens)]
        if not any(limit > 0 for limit in limits):
            return [Draft(tokens=[]) for _ in sequences]
        feeds, starts = [], []
        for sequence, cached, limit in zip(sequences, self.cached, limits):
            kept = self._common_prefix(sequence, cached) if limit > 0 else 0
            feeds.append(sequence[kept:] if limit > 0 else [])
            starts.append(kept)
        tokens: list[list[int]] = [[] for _ in sequences]
        rows_probs: list[list[torch.Tensor]] = [[] for _ in sequences]
        passes = [0] * len(sequences)
        drafting = [limit > 0 for limit in limits]
        greedy = self._greedy_choices_suffice(target, len(sequences))
        while True:
            scored = [1 if feed else 0 for feed in feeds]
            if greedy:
                rules = [(self._rules(row), len(sequence) + len(tokens[row]), sequence + tokens[row])
                         for row, sequence in enumerate(sequences)]
                choices = target.greedy_rows(feeds, starts, scored, rules)
            else:
                logits = target.extend_rows(feeds, starts, scored)
            feeds, starts = [], []
            for row, sequence in enumerate(sequences):
                if not drafting[row]:
                    feeds.append([])
                    starts.append(0)
                    continue
                passes[row] += 1
                if greedy:
                    token = choices[row][0]
                else:
                    token = self._choose(row, logits[row][0], sequence + tokens[row], rows_probs[row],
                                         bool(tokens[row]))
                if token is None:  # the drafter is not confident enough to go on
                    drafting[row] = False
                else:
                    tokens[row].append(token)
                    position = len(sequence) + len(tokens[row])
                    drafting[row] = not (token == self.context.eos_token_id or position >= target.max_positions
                                         or len(tokens[row]) >= limits[row])
                feeds.append([token] if drafting[row] else [])
                starts.append(position - 1 if drafting[row] else 0)
            if not any(drafting):
                break
        drafts = []
        for row, sequence in enumerate(sequences):
            if tokens[row]:
                # the cache now holds the sequence and every draft token but the last
                self.cached[row] = sequence + tokens[row][:-1]
            probs = torch.stack(rows_probs[row]) if rows_probs[row] else None
            drafts.append(Draft(tokens=tokens[row], probs=probs, forward_passes=passes[row]))
        return drafts

    def _greedy_choices_suffice(self, target, rows: int) -> bool:
        """Whether the target's greedy choices alone make this draft (greedy, no confidence stop, rules that only
        suppress tokens), so that no step computes full logits."""
        return (hasattr(target, "greedy_rows") and not self.context.sampling.do_sample
                and self.confidence_threshold <= 0 and all(greedy_by_mask(self._rules(row)) for row in range(rows)))

    def _choose(self, row: int, logits: torch.Tensor, context_tokens: list[int], probs_out: list,
                may_stop: bool) -> int | None:
        """The next draft token of `row` (None: stop drafting this row), under the main model's rules."""
        context = self.context
        position = len(context_tokens)
        scores = self._rules(row).apply(logits.unsqueeze(0), position, context_tokens)[0]
        sampling = self._sampling(row)
        if sampling.do_sample:
            probs = sampling.probabilities(scores)
            probs_out.append(probs)
            return draw(probs, context.generator)
        token = int(scores.argmax())
        if self.confidence_threshold > 0 and may_stop:
            if float(scores.float().softmax(dim=-1)[token]) < self.confidence_threshold:
                return None
        return token

    def keep(self, rows: torch.Tensor, memo: dict) -> None:
        kept = rows.tolist()
        if self.cached:
            self.cached = [self.cached[index] for index in kept]
        if getattr(self.context, "row_rules", None):
            self.context = replace(self.context, row_rules=[self.context.row_rules[index] for index in kept])
        if getattr(self.context, "row_sampling", None):
            self.context = replace(self.context, row_sampling=[self.context.row_sampling[index] for index in kept])
        as_rows_target(self.target).keep(rows, memo)
