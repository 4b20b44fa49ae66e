"""Logit rules applied identically on the main model and on every drafter.

Whisper's decoding suppresses some tokens everywhere (`suppress_tokens`) and some only at the first
generated position (`begin_suppress_tokens`); faster-whisper's decoder (CTranslate2) can also penalise tokens
already generated (`repetition_penalty`) and ban a token that would repeat an n-gram (`no_repeat_ngram_size`);
sampling then warps the scores (temperature, top-k, top-p). Drafter and verifier must see the same rules, or a
draft could propose a token the main model can never emit and, when sampling, the accept/reject arithmetic would
compare different distributions.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import ClassVar

import torch

from ..errors import OptionError


@dataclass(frozen=True)
class LogitRules:
    """Token suppression and repetition rules. Row i of a logits block predicts the token at sequence index
    `first_index + i`; the tokens before it from `begin_index` on are its history (CTranslate2's: what the row
    generated, a forced prefix included, not the prompt).

    The repetition rules are CTranslate2's, in its order (penalty, then n-gram ban, then suppression): the logit of
    every distinct token of the history is divided by `repetition_penalty` when positive and multiplied by it when
    negative; with `no_repeat_ngram_size` n, a token that would complete an n-gram already in the history is
    banned (n = 1: every token of the history)."""

    suppress_tokens: tuple[int, ...] = ()
    begin_suppress_tokens: tuple[int, ...] = ()
    begin_index: int = 0  # sequence index of the first generated token
    repetition_penalty: float = 1.0  # 1: off; above 1 discourages repeating a token, below 1 encourages it
    no_repeat_ngram_size: int = 0  # 0: off
    _masks: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        if not self.repetition_penalty > 0:
            raise ValueError(f"repetition_penalty must be > 0, not {self.repetition_penalty}")
        if not isinstance(self.no_repeat_ngram_size, numbers.Integral) or self.no_repeat_ngram_size < 0:
            raise ValueError(f"no_repeat_ngram_size must be an integer >= 0, not {self.no_repeat_ngram_size}")

    def _mask(self, tokens: tuple[int, ...], vocab_size: int, device) -> torch.Tensor:
        key = (tokens, vocab_size, str(device))
        if key not in self._masks:
            mask = torch.zeros(vocab_size, dtype=torch.bool, device=device)
            valid = [token for token in tokens if 0 <= token < vocab_size]
            mask[valid] = True
            self._masks[key] = mask
        return self._masks[key]

    def _ids(self, tokens: tuple[int, ...], vocab_size: int, device) -> torch.Tensor | None:
        """The ids of `tokens` within the vocabulary, as a cached index tensor (None: none)."""
        key = ("ids", tokens, vocab_size, str(device))
        if key not in self._masks:
            valid = sorted({token for token in tokens if 0 <= token < vocab_size})
            self._masks[key] = torch.tensor(valid, dtype=torch.long, device=device) if valid else None
        return self._masks[key]

    def apply(self, logits: torch.Tensor, first_index: int, tokens: list[int] | None = None) -> torch.Tensor:
        """Return logits [n, vocab] penalised for repetition, with the suppressed and banned entries set to -inf
        (a new tensor unless no rule changes anything).

        `tokens` holds the sequence the rows continue (row i may read tokens[:first_index + i]); suppression alone
        does not need it, the repetition rules and rules that depend on earlier tokens (Whisper's timestamp rules)
        do."""
        return self.apply_rows(logits, [(first_index + row, tokens) for row in range(logits.shape[0])])

    def apply_rows(self, logits: torch.Tensor, rows: list[tuple[int, list[int] | None]]) -> torch.Tensor:
        """`apply` for rows of unrelated sequences: row r predicts sequence index rows[r][0] and may read
        rows[r][1][:rows[r][0]]. A new tensor (or `logits` itself when these rules change nothing)."""
        if (not self.suppress_tokens and not self.begin_suppress_tokens and not self._repetition_rules()
                and type(self)._rule_rows_ is LogitRules._rule_rows_):
            return logits
        scores = logits.clone()
        self._rule_rows_(scores, rows)
        return scores

    def log_probs_rows(self, logits: torch.Tensor, rows: list[tuple[int, list[int] | None]],
                       overwrite: bool = False) -> torch.Tensor:
        """float32 log-softmax of `apply_rows(logits, rows)` [n, vocab], each row's numbers computed as for that
        row alone (every operation works row by row). `overwrite`: `logits` is the caller's own scratch block,
        which the rules may edit in place (saves a copy)."""
        scores = logits.float()
        if scores is logits and not overwrite:
            scores = scores.clone()
        self._rule_rows_(scores, rows)
        return torch.log_softmax(scores, dim=-1)

    def _rule_rows_(self, scores: torch.Tensor, rows: list[tuple[int, list[int] | None]]) -> None:
        """The rules in place, row by row, in CTranslate2's order: the repetition penalty, the n-gram ban, then
        suppression (-inf); the one implementation behind apply and log_probs_rows (subclasses extend it)."""
        vocab_size, device = scores.shape[-1], scores.device
        if self._repetition_rules():
            histories = [self._history(index, tokens) for index, tokens in rows]
            penalised = (_row_mask([set(history) for history in histories], vocab_size, device)
                         if self.repetition_penalty != 1 else None)
            if penalised is not None:
                penalty = self.repetition_penalty
                scores.copy_(torch.where(penalised, torch.where(scores < 0, scores * penalty, scores / penalty),
                                         scores))
            banned = (_row_mask([_ngram_ban(history, self.no_repeat_ngram_size) for history in histories],
                                vocab_size, device) if self.no_repeat_ngram_size > 0 else None)
            if banned is not None:
                scores.masked_fill_(banned, -float("inf"))
        suppress = self._ids(self.suppress_tokens, vocab_size, device)
        if suppress is not None:
            scores.index_fill_(1, suppress, -float("inf"))
        begin = self._ids(self.begin_suppress_tokens, vocab_size, device)
        if begin is not None:
            for row, (index, _) in enumerate(rows):
                if index == self.begin_index:
                    scores[row].index_fill_(0, begin, -float("inf"))

    def _repetition_rules(self) -> bool:
        return self.repetition_penalty != 1 or self.no_repeat_ngram_size > 0

    def _history(self, index: int, tokens: list[int] | None) -> list[int]:
        """The history of the row predicting sequence index `index`: tokens[begin_index:index]."""
        if tokens is None:
            raise ValueError("repetition rules read the tokens before each row: pass tokens")
        return tokens[self.begin_index:index] if index > self.begin_index else []

    def repeat_mask(self, first_index: int, rows: int, vocab_size: int, device,
                    tokens: list[int] | None) -> torch.Tensor | None:
        """[rows, vocab]: True where the n-gram ban forbids a token for rows predicting first_index.. (None:
        nowhere): every token that followed an earlier occurrence of the history's last n - 1 tokens."""
        size = self.no_repeat_ngram_size
        if size <= 0:
            return None
        return _row_mask([_ngram_ban(self._history(first_index + row, tokens), size) for row in range(rows)],
                         vocab_size, device)

    def forbidden(self, first_index: int, rows: int, vocab_size: int, device,
                  tokens: list[int] | None) -> torch.Tensor | None:
        """[rows, vocab]: suppression and the n-gram ban together (None: nothing); a new tensor when both apply."""
        suppressed = self.suppressed(first_index, rows, vocab_size, device)
        banned = self.repeat_mask(first_index, rows, vocab_size, device, tokens)
        if banned is None:
            return suppressed
        return banned if suppressed is None else banned | suppressed

    # Whisper's timestamp rule (see whisper/runtime/timestamps.py) forces a choice within the ids from `group_begin` on
    # when together they are likelier than the best id below; None: no such rule
    group_begin: ClassVar[int | None] = None

    def greedy_mask(self, first_index: int, rows: int, vocab_size: int, device, tokens: list[int]):
        """[rows, vocab]: what these rules forbid at rows predicting first_index.., given the sequence `tokens` the
        rows continue (None: nothing). A greedy choice is the best allowed id, except that the group rule (if
        `group_begin`) compares the group's total probability with the best allowed id below it first. The
        repetition penalty changes values, not what is allowed: with it on, greedy_by_mask says no."""
        return self.forbidden(first_index, rows, vocab_size, device, tokens)

    def suppressed(self, first_index: int, rows: int, vocab_size: int, device) -> torch.Tensor | None:
        """[rows, vocab]: True where suppression puts -inf for rows predicting first_index.. (None: nowhere).
        Shared between calls (every decoding step asks): read it, do not modify it."""
        if not self.suppress_tokens and not self.begin_suppress_tokens:
            return None
        row = self.begin_index - first_index
        begin_row = row if self.begin_suppress_tokens and 0 <= row < rows else -1
        key = ("rows", rows, begin_row, vocab_size, str(device))
        if key not in self._masks:
            mask = torch.zeros(rows, vocab_size, dtype=torch.bool, device=device)
            if self.suppress_tokens:
                mask |= self._mask(self.suppress_tokens, vocab_size, device)
            if begin_row >= 0:
                mask[begin_row] |= self._mask(self.begin_suppress_tokens, vocab_size, device)
            self._masks[key] = mask
        return self._masks[key]


def _row_mask(rows: list, vocab_size: int, device) -> torch.Tensor | None:
    """[len(rows), vocab]: True at the ids each row lists (ids outside the vocabulary ignored); None if none."""
    pairs = [(row, token) for row, ids in enumerate(rows) for token in ids if 0 <= token < vocab_size]
    if not pairs:
        return None
    mask = torch.zeros(len(rows), vocab_size, dtype=torch.bool, device="cpu")  # built on the host, moved once
    index = torch.tensor(pairs, dtype=torch.long, device="cpu")
    mask[index[:, 0], index[:, 1]] = True
    return mask.to(device)


def _ngram_ban(history: list[int], size: int) -> set[int]:
    """The tokens that would complete an n-gram (n = `size`) already in `history`: each token that follows an
    earlier occurrence of the history's last size - 1 tokens (CTranslate2's NoRepeatNgram)."""
    if len(history) < size:
        return set()
    tail = history[len(history) - size + 1:]
    return {history[start + size - 1] for start in range(len(history) - size + 1)
            if history[start:start + size - 1] == tail}


def greedy_by_mask(rules: LogitRules) -> bool:
    """True when a greedy choice under `rules` follows from `greedy_mask` and the group rule alone, so that a
    target may pick it without the full logits (see argmax.py): suppression and the n-gram ban do, and so do the
    timestamp rules; the repetition penalty changes values, so it needs the full logits. A subclass whose rules
    do more must override greedy_mask and say so with `greedy_by_mask = True`."""
    if rules.repetition_penalty != 1:
        return False
    plain = type(rules).apply is LogitRules.apply and type(rules)._rule_rows_ is LogitRules._rule_rows_
    return plain or getattr(rules, "greedy_by_mask", False)


@dataclass(frozen=True)
class Sampling:
    """Sampling settings; `do_sample=False` means greedy (argmax) decoding."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self):
        if not isinstance(self.temperature, numbers.Real) or not 0 <= self.temperature < float("inf"):
            raise OptionError("temperature", f"{{temperature}} must be a number >= 0, not {self.temperature!r}")
        if self.do_sample and self.temperature == 0:
            raise OptionError("temperature", "{temperature} must be > 0 with {do_sample} (0 is greedy decoding)")
        if not isinstance(self.top_p, numbers.Real) or not 0 < self.top_p <= 1:
            raise OptionError("top_p", f"{{top_p}} must be in (0, 1], not {self.top_p!r}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, numbers.Integral) or self.top_k < 0:
            raise OptionError("top_k", f"{{top_k}} must be an integer >= 0 (0: off), not {self.top_k!r}")

    def generator(self, seed: int | None) -> torch.Generator | None:
        """The random source of one decoding run: None for greedy decoding, else a CPU generator seeded with
        `seed` (a fresh random seed when None). On the CPU whatever the model's device, so that a seed draws the
        same numbers everywhere; `draw` and `uniform` take it there."""
        if not self.do_sample:
            return None
        generator = torch.Generator(device="cpu")
        generator.manual_seed(seed if seed is not None else torch.seed())
        return generator

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """The distribution sampling draws from, per row: softmax of the warped logits (float32)."""
        scores = logits.float() / self.temperature
        if self.top_k and self.top_k < scores.shape[-1]:
            kth = torch.topk(scores, self.top_k, dim=-1).values[..., -1:]
            scores = scores.masked_fill(scores < kth, -float("inf"))
        if self.top_p < 1.0:
            sorted_scores, order = torch.sort(scores, descending=True, dim=-1)
            sorted_probs = sorted_scores.softmax(dim=-1)
            # drop a token once the mass before it already reaches top_p (the first token always stays)
            drop_sorted = (sorted_probs.cumsum(dim=-1) - sorted_probs) >= self.top_p
            drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
            scores = scores.masked_fill(drop, -float("inf"))
        return scores.softmax(dim=-1)


# Every random number of decoding is drawn here, on the generator's device (the CPU, see Sampling.generator),
# whatever device the probabilities come from: torch refuses a generator on another device than its output.


def draw(probabilities: torch.Tensor, generator: torch.Generator | None) -> int:
    """One token id drawn from `probabilities` [vocab]."""
    if generator is not None and probabilities.device != generator.device:
        probabilities = probabilities.to(generator.device)
    return int(torch.multinomial(probabilities, 1, generator=generator))


def uniform(generator: torch.Generator | None) -> float:
    """One number drawn uniformly from [0, 1)."""
    device = generator.device if generator is not None else torch.device("cpu")
    return float(torch.rand((), generator=generator, device=device))
