"""Whisper's timestamp rules as a logit rule, applied per row so that a verification block stays exact.

Whisper writes a transcript as `<|t0|> text <|t1|><|t1|> text <|t2|>...`: its ~1500 timestamp tokens
(<|0.00|> .. <|30.00|> in 0.02 s steps) follow <|notimestamps|> in the vocabulary. openai/whisper's
`ApplyTimestampRules` and transformers' `WhisperTimeStampLogitsProcessor` constrain every step:
<|notimestamps|> is never emitted; timestamps come in pairs (after a lone timestamp no text, after a
pair no timestamp); timestamps never decrease and a segment never has zero length; the first token is a
timestamp no later than `max_initial_timestamp_index`; and when the timestamps together are more likely
than the single likeliest text token, a timestamp is forced.

Each rule depends on the tokens generated before the row it edits. Row i of a block predicts sequence
index first_index + i and reads only tokens[:first_index + i], so the main model verifying k draft tokens
in one pass and a drafter stepping one token at a time constrain every position identically.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from ...core.logits import LogitRules

NEGATIVE_INFINITY = -float("inf")


@dataclass(frozen=True)
class TimestampRules(LogitRules):
    """Suppression and repetition rules (LogitRules) followed by Whisper's timestamp rules, for rows at or after
    `begin_index` (CTranslate2's order: the timestamp rule that compares probabilities sees penalised logits)."""

    timestamp_begin: int = -1  # id of <|0.00|>; every id from it up is a timestamp
    no_timestamps: int = -1
    end_of_text: int = -1  # ids below it are text
    max_initial_timestamp_index: int | None = None
    # the last timestamp a window may hold, its length (a chunk_length window's <|10.00|>); None: the vocabulary's
    max_timestamp_index: int | None = None
    greedy_by_mask: ClassVar[bool] = True  # greedy_mask + the group rule on timestamps are the whole rule

    def __post_init__(self):
        super().__post_init__()
        if min(self.timestamp_begin, self.no_timestamps, self.end_of_text) < 0:
            raise ValueError("timestamp rules need timestamp_begin, no_timestamps and end_of_text ids")

    @property
    def group_begin(self) -> int:
        return self.timestamp_begin

    def greedy_mask(self, first_index: int, rows: int, vocab_size: int, device, tokens: list[int]) -> torch.Tensor:
        """Suppression and the n-gram ban, then <|notimestamps|>, pairing and order per row, as a mask; the rule
        that forces a timestamp when the timestamps together outweigh the best text token is the group rule
        (`group_begin`)."""
        mask = self.pairing_mask(first_index, rows, vocab_size, device, tokens)
        ruled = self.forbidden(first_index, rows, vocab_size, device, tokens)
        return mask if ruled is None else mask | ruled

    def pairing_mask(self, first_index: int, rows: int, vocab_size: int, device, tokens: list[int]) -> torch.Tensor:
        """[rows, vocab]: True where <|notimestamps|>, pairing and order forbid a token, for rows predicting
        first_index..: each row's bounds worked out from its tokens on the host, then one upload and one
        comparison over the whole block (no operation per row on the device)."""
        bounds = [self._row_bounds(first_index + row, tokens, vocab_size) for row in range(rows)]
        table = torch.tensor(bounds, dtype=torch.long, device=device).view(rows, 4, 1)
        key = ("arange", vocab_size, str(device))
        if key not in self._masks:
            self._masks[key] = torch.arange(vocab_size, device=device)
        ids = self._masks[key]
        text_end, timestamps_low, timestamps_high, banned = table.unbind(1)
        return ((ids < text_end) | ((ids >= self.timestamp_begin) & (ids < timestamps_low))
                | (ids >= timestamps_high) | (ids == banned))

    def _rule_rows_(self, scores: torch.Tensor, rows: list[tuple[int, list[int] | None]]) -> None:
        """Suppression, the pairing rules, then the group rule: a timestamp is forced where the timestamps together
        are likelier than the best text token (decided on the device: no wait for it)."""
        ruled = self._pair_rows_(scores, rows)
        if ruled:
            self._force_timestamps_(scores, ruled, torch.log_softmax(scores.float(), dim=-1))

    def log_probs_rows(self, logits: torch.Tensor, rows: list[tuple[int, list[int] | None]],
                       overwrite: bool = False) -> torch.Tensor:
        """As LogitRules.log_probs_rows; the group rule's log-softmax is the answer for every row it does not
        change, so only rows where it forces a timestamp (their flags read on the host) lose their text and take a
        second one."""
        scores = logits.float()
        if scores is logits and not overwrite:
            scores = scores.clone()
        ruled = self._pair_rows_(scores, rows)
        log_probs = torch.log_softmax(scores, dim=-1)
        if ruled:
            forced = self._forced(ruled, log_probs).nonzero().flatten()
            if len(forced):
                timestamps_only = scores[forced]
                timestamps_only[:, :self.timestamp_begin] = NEGATIVE_INFINITY
                log_probs[forced] = torch.log_softmax(timestamps_only, dim=-1)
        return log_probs

    def _pair_rows_(self, scores: torch.Tensor, rows: list[tuple[int, list[int] | None]]) -> list[bool]:
        """Suppression, then <|notimestamps|>, pairing and order per row, in place: each row's bounds worked out on
        the host, then a fill of each forbidden range (no block-wide comparison). Which rows the rules cover
        ([] when none)."""
        super()._rule_rows_(scores, rows)
        vocab_size, begin = scores.shape[-1], self.timestamp_begin
        ruled = [index >= self.begin_index for index, _ in rows]
        if not any(ruled):
            return []
        for row, (index, tokens) in enumerate(rows):
            if not ruled[row]:
                continue
            if tokens is None:
                raise ValueError("timestamp rules read the tokens before each row: pass tokens")
            text_end, timestamps_low, timestamps_high, banned = self._row_bounds(index, tokens, vocab_size)
            values = scores[row]
            if text_end > 0:
                values[:text_end] = NEGATIVE_INFINITY
            if timestamps_low > begin:
                values[begin:timestamps_low] = NEGATIVE_INFINITY
            if timestamps_high < vocab_size:
                values[timestamps_high:] = NEGATIVE_INFINITY
            if 0 <= banned < vocab_size:
                values[banned] = NEGATIVE_INFINITY
        return ruled

    def _force_timestamps_(self, scores: torch.Tensor, ruled: list[bool], log_probs: torch.Tensor) -> torch.Tensor:
        """The group rule, in place on `scores` given their log-softmax: text goes to -inf in every ruled row whose
        timestamps together are likelier than its best text token. The forced rows' flags [n] (on the device)."""
        forced = self._forced(ruled, log_probs)
        scores[:, :self.timestamp_begin].masked_fill_(forced[:, None], NEGATIVE_INFINITY)
        return forced

    def _forced(self, ruled: list[bool], log_probs: torch.Tensor) -> torch.Tensor:
        """[n] (on the device): the ruled rows whose timestamps together are likelier than their best text token."""
        timestamp_log_prob = log_probs[:, self.timestamp_begin:].logsumexp(dim=-1)
        best_text_log_prob = log_probs[:, :self.timestamp_begin].max(dim=-1).values
        forced = timestamp_log_prob > best_text_log_prob
        if not all(ruled):
            forced &= torch.tensor(ruled, device=forced.device)
        return forced

    def _row_bounds(self, index: int, tokens: list[int], vocab_size: int) -> tuple[int, int, int, int]:
        """_bounds of the row predicting sequence index `index` after `tokens` (nothing forbidden before the rules
        begin)."""
        if index < self.begin_index:
            return 0, self.timestamp_begin, vocab_size, -1
        return self._bounds(tokens[self.begin_index:index], vocab_size)

    def _bounds(self, generated: list[int], vocab_size: int) -> tuple[int, int, int, int]:
        """What one row may not choose, given the tokens generated before it, as (ids below this, timestamps
        from timestamp_begin below this, ids from this up, this id): <|notimestamps|> never; at the start only a
        timestamp (up to max_initial_timestamp_index); after a lone timestamp no text, after a pair no
        timestamp; timestamps never decrease and a segment never has zero length; none after max_timestamp_index."""
        begin = self.timestamp_begin
        text_end, timestamps_low = 0, begin
        timestamps_high = vocab_size if self.max_timestamp_index is None else min(
            vocab_size, begin + self.max_timestamp_index + 1)
        if not generated:
            if self.max_initial_timestamp_index is not None:
                timestamps_high = min(timestamps_high, begin + self.max_initial_timestamp_index + 1)
            return begin, timestamps_low, timestamps_high, self.no_timestamps
        last_was_timestamp = generated[-1] >= begin
        penultimate_was_timestamp = len(generated) < 2 or generated[-2] >= begin
        if last_was_timestamp:
            if penultimate_was_timestamp:
                timestamps_high = begin
            else:
                text_end = self.end_of_text
        timestamps = [token for token in generated if token >= begin]
        if timestamps:
            # a segment ends after it starts; the next one may start where the last one ended
            timestamps_low = (timestamps[-1] if last_was_timestamp and not penultimate_was_timestamp
                              else timestamps[-1] + 1)
        return text_end, timestamps_low, timestamps_high, self.no_timestamps
