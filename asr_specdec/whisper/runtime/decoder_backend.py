"""What a decoder backend does for WhisperDecoderRunner (decoder.py), which chooses one in one place: the native
CPU kernels (native_decoder.NativeBackend) or the PyTorch path (torch_decoder.TorchBackend).

A backend runs passes over the cache (`hidden_states`, `feed_rows`), projects hidden states on the vocabulary
(`logits`), picks greedy tokens (`greedy`), and owns the cache's key layout (`blocked`: the kernels' blocks of
16, else columns; kv_cache.py) and dtypes. `batch_invariant`: a token's numbers are the same bits whatever else
its pass holds (the native kernels), so hidden states recorded while decoding are those of a fresh pass.
"""

from __future__ import annotations

from typing import Protocol

import torch

from .kv_cache import KVCache


class DecoderBackend(Protocol):
    name: str  # "native" or "pytorch"
    weights: str  # storage format of the linear layers
    dtype: torch.dtype  # of hidden states in and out
    kv_dtype: torch.dtype  # of the self-attention keys and values
    cross_dtype: torch.dtype  # of the cross-attention keys and values in the cache
    cross_compute: torch.dtype  # in which they are projected
    blocked: bool  # keys in the kernels' blocks of 16 (else columns)
    batch_invariant: bool
    shares_cross: bool  # rows may read one copy of cross states (KVCache.cross_rows: the beams of one audio)
    native_decoder: object  # the NativeDecoder running the passes (native_decoder.py), or None on PyTorch

    def hidden_states(self, cache: KVCache, token_ids: torch.Tensor, starts: list[int]) -> torch.Tensor:
        """Final hidden states [batch, n, width] of token_ids [batch, n], row b at positions starts[b].."""

    def feed_rows(self, cache: KVCache, feeds: list[list[int]], starts: list[int]) -> list[torch.Tensor]:
        """Final hidden states [len(feeds[b]), width] of each row fed feeds[b] at starts[b].. (empty: left alone)."""

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits [rows, vocab] of hidden [rows, width]."""

    def greedy(self, hidden: torch.Tensor, suppressed: torch.Tensor | None, group_begins: list[int | None] | None,
               certified: bool) -> torch.Tensor:
        """Greedy tokens [rows] (-1 where only the full logits settle the group rule); see
        WhisperDecoderRunner.greedy_choices."""


def full_argmax(backend: DecoderBackend, hidden: torch.Tensor, suppressed: torch.Tensor | None,
                group_begins: list[int | None] | None) -> torch.Tensor:
    """The greedy choice from every logit; -1 in every row when a row is under the group rule (the caller
    applies the rules to the full logits)."""
    if group_begins is not None and any(begin is not None for begin in group_begins):
        return torch.full((hidden.shape[0],), -1, dtype=torch.int64, device=hidden.device)
    logits = backend.logits(hidden)
    if suppressed is not None:
        logits = logits.masked_fill(suppressed, -float("inf"))
    return logits.argmax(dim=-1)
