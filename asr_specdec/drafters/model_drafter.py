"""Shared mechanics of drafters that run a model: sync its KV cache to the sequence, then step greedily or
by sampling, under the same logit rules as the main model."""

from __future__ import annotations

import torch

from .base import Draft, Drafter


class ModelDrafter(Drafter):
    """Drafts by running `self.target` (anything with the engine's Target interface: `extend` and
    `max_positions`) token by token.

    Subclasses set the target up in `start`. Its cache holds the drafter's keys/values for `self.cached`
    tokens; each draft first re-feeds whatever part of the sequence differs from them.
    """

    target: object

    def __init__(self, confidence_threshold: float = 0.0):
        self.confidence_threshold = confidence_threshold
        self.cached: list[int] = []

    def start(self, context) -> None:
        super().start(context)
        self.cached = []

    def _forward(self, token_ids: list[int], start: int) -> torch.Tensor:
        return self.target.extend(token_ids, start, scored=1)[0]

    def _common_prefix(self, sequence: list[int]) -> int:
        limit = min(len(self.cached), len(sequence) - 1)
        for index in range(limit):
            if self.cached[index] != sequence[index]:
                return index
        return limit

    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        context = self.context
        if len(sequence) >= self.target.max_positions:
            return Draft(tokens=[])
        kept = self._common_prefix(sequence)
        logits = self._forward(sequence[kept:], kept)
        passes = 1
        position = len(sequence)
        tokens: list[int] = []
        rows: list[torch.Tensor] = []
        while True:
            scores = context.rules.apply(logits.unsqueeze(0), position, sequence + tokens)[0]
            if context.sampling.do_sample:
                probs = context.sampling.probabilities(scores)
                token = int(torch.multinomial(probs, 1, generator=context.generator))
                rows.append(probs)
            else:
                token = int(scores.argmax())
                if self.confidence_threshold > 0:
                    probs = scores.float().softmax(dim=-1)
                    if float(probs[token]) < self.confidence_threshold and tokens:
                        break
            tokens.append(token)
            position += 1
            finished = token == context.eos_token_id or position >= self.target.max_positions
            if finished or len(tokens) >= max_tokens:
                break
            logits = self._forward([token], position - 1)
            passes += 1
        # the cache now holds the sequence and every draft token but the last
        self.cached = sequence + tokens[:-1]
        probs = torch.stack(rows) if rows else None
        return Draft(tokens=tokens, probs=probs, forward_passes=passes)
