"""The decoder's static KV cache and its two key layouts, one per decoder backend.

Values are [batch, heads, slots, head_dim] in both. Keys are laid out for the backend that reads them:
- blocks (the native kernels): [batch, heads, slots / 16, head_dim, 16], blocks of 16 keys transposed, so the
  kernels score 16 keys per load reading memory in order;
- rows (the PyTorch path): [batch, heads, slots, head_dim] like the values, what scaled_dot_product_attention
  reads; there each layer's keys and values are views of one "pair" tensor [batch, slots, 2 * width] (a
  position's key then its value), so a pass writes both with one indexed store.
A key tensor's rank says which layout it is in (5: blocks, 4: rows); every reader goes through
`key_columns`, every writer through `write_keys`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

SLOT_MULTIPLE = 16  # the kernels read keys 16 at a time


def padded(count: int) -> int:
    return -(-count // SLOT_MULTIPLE) * SLOT_MULTIPLE


def is_blocked(keys: torch.Tensor) -> bool:
    return keys.dim() == 5


def blocked_keys(keys: torch.Tensor) -> torch.Tensor:
    """[batch, heads, length, head_dim] keys in the block layout (padded with zeros to a multiple of 16)."""
    batch, heads, length, head_dim = keys.shape
    blocks = keys.new_empty(batch, heads, padded(length) // SLOT_MULTIPLE, head_dim, SLOT_MULTIPLE)
    lanes = blocks.transpose(3, 4)  # [batch, heads, block, lane, head_dim]: written in one copy from any strides
    whole = length // SLOT_MULTIPLE
    lanes[:, :, :whole].copy_(keys[:, :, : whole * SLOT_MULTIPLE].unflatten(2, (whole, SLOT_MULTIPLE)))
    if whole < blocks.shape[2]:
        rest = length - whole * SLOT_MULTIPLE
        lanes[:, :, whole, :rest].copy_(keys[:, :, whole * SLOT_MULTIPLE:])
        lanes[:, :, whole, rest:].zero_()
    return blocks


def row_keys(keys: torch.Tensor) -> torch.Tensor:
    """[batch, heads, length, head_dim] keys in the row layout (contiguous)."""
    return keys.contiguous()


def key_columns(keys: torch.Tensor, length: int) -> torch.Tensor:
    """The first `length` keys of a cache key tensor (either layout) as [batch, heads, head_dim, length]: a view
    of the row layout, a copy of the block layout."""
    if not is_blocked(keys):
        return keys[:, :, :length].transpose(2, 3)
    batch, heads, count, head_dim, lanes = keys.shape
    used = -(-length // lanes)
    return keys[:, :, :used].permute(0, 1, 3, 2, 4).reshape(batch, heads, head_dim, used * lanes)[..., :length]


def write_keys(cache_keys: torch.Tensor, rows: torch.Tensor, slots: torch.Tensor, keys: torch.Tensor) -> None:
    """Write keys [batch, n, heads, head_dim] of batch rows `rows` [batch, 1] at slots [batch, n]."""
    if is_blocked(cache_keys):
        # advanced indices on the batch and slot dims put them first: [batch, n, heads, head_dim]
        blocks, lanes = slots // SLOT_MULTIPLE, slots % SLOT_MULTIPLE
        cache_keys.permute(0, 2, 4, 1, 3)[rows, blocks, lanes] = keys
    else:
        cache_keys.transpose(1, 2)[rows, slots] = keys


def self_pairs(batch: int, heads: int, slots: int, head_dim: int, dtype: torch.dtype, device, layers: int
               ) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]:
    """(pairs, keys, values) of a PyTorch-path cache: per layer one zeroed [batch, slots, 2 * heads * head_dim]
    tensor and its keys and values in the row layout (views of it)."""
    pairs = [torch.zeros(batch, slots, 2 * heads * head_dim, dtype=dtype, device=device) for _ in range(layers)]
    views = [pair_views(pair, heads) for pair in pairs]
    return pairs, [keys for keys, _ in views], [values for _, values in views]


def pair_views(pair: torch.Tensor, heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Keys and values [batch, heads, slots, head_dim] of a pair tensor [batch, slots, 2 * width]."""
    batch, slots, double = pair.shape
    split = pair.view(batch, slots, 2, heads, double // (2 * heads))
    return split[:, :, 0].transpose(1, 2), split[:, :, 1].transpose(1, 2)


@dataclass
class KVCache:
    """Self-attention keys (in their backend's layout, see the module's docstring) and values [batch, heads,
    slots, head_dim] per layer; slots hold positions 0..max_positions-1, the scratch slot for padding, then
    padding to a multiple of 16. Cross-attention keys (the same layout over the encoder's frames) and values
    [batch, heads, encoder_length, head_dim], computed once from the encoder output; in int8 (native kernels
    only) with a scale per key [batch, heads, encoder slots] and per value [batch, heads, encoder_length], the
    keys then [batch, heads, slots / 16, head_dim / 4, 16, 4] uint8 (q + 128, a key's four dims together, what
    the kernels' int8 scores read)."""

    self_keys: list[torch.Tensor]
    self_values: list[torch.Tensor]
    cross_keys: list[torch.Tensor]
    cross_values: list[torch.Tensor]
    max_positions: int
    cross_key_scales: list[torch.Tensor] | None = None
    cross_value_scales: list[torch.Tensor] | None = None
    # True: `keep` lets rows share cross-attention states (the beams of one audio) through `cross_rows`
    # (the native kernels read them so); False: every row has its own copy (the PyTorch path)
    shares_cross: bool = False
    cross_rows: torch.Tensor | None = None  # int32 [batch]: the row of the cross states each row reads (None: its own)
    # the PyTorch path's [batch, slots, 2 * width] per layer, of which self_keys and self_values are views
    self_pairs: list[torch.Tensor] | None = None

    def __post_init__(self):
        self.attention_views: dict = {}  # (layer, slots) -> keys and values over the first slots (views)
        self.graphs: dict = {}  # a pass's bucket -> its captured graph (step_graphs.py), over these tensors

    def first_layers(self, count: int) -> KVCache:
        """A cache over the first `count` layers of this one, sharing its tensors (an early-exit drafter reads and
        writes the main model's lower layers): every per-layer list is cut, every other field carried as it is."""
        return KVCache(**{field.name: value[:count] if isinstance(value := getattr(self, field.name), list) else value
                          for field in fields(self)})

    @property
    def batch_size(self) -> int:
        return self.self_keys[0].shape[0]

    @property
    def slots(self) -> int:
        return self.self_values[0].shape[2]

    @property
    def encoder_length(self) -> int:
        return self.cross_values[0].shape[2]

    def keep(self, rows: torch.Tensor, memo: dict) -> None:
        """Keep only the batch rows `rows` (slot numbers, on any device; a row listed twice is duplicated), in
        place. Tensors shared with other caches (a drafter reads the main model's cross-attention states) are
        compacted once per `memo`, so they stay shared. With `shares_cross`, duplicated rows read one copy of
        their cross-attention states."""
        if id(self) in memo:
            return
        memo[id(self)] = self
        self._native_view = None
        self.attention_views, self.graphs = {}, {}
        cross_index = rows
        if self.shares_cross:
            wanted = rows.cpu() if self.cross_rows is None else self.cross_rows[rows.cpu()]
            cross_index, remapped = torch.unique(wanted, return_inverse=True)
            identity = torch.equal(remapped, torch.arange(len(remapped), device="cpu"))
            self.cross_rows = None if identity else remapped.to(torch.int32)
            if torch.equal(cross_index, torch.arange(self.cross_values[0].shape[0], device="cpu")):
                cross_index = None  # every cross row is still read: nothing to compact
        paired = self.self_pairs is not None  # keys and values follow their pairs
        for states, index_rows in ((self.self_pairs or [], rows), ([] if paired else self.self_keys, rows),
                                   ([] if paired else self.self_values, rows), (self.cross_keys, cross_index),
                                   (self.cross_values, cross_index), (self.cross_key_scales or [], cross_index),
                                   (self.cross_value_scales or [], cross_index)):
            if index_rows is None:
                continue
            key = tuple(index_rows.tolist())
            for index, tensor in enumerate(states):
                if (id(tensor), key) not in memo:  # the old tensor stays in memo so its id is not reused meanwhile
                    memo[(id(tensor), key)] = (tensor, tensor.index_select(0, _on(index_rows, tensor.device, memo)))
                states[index] = memo[(id(tensor), key)][1]
        if paired:
            heads = self.self_values[0].shape[1]
            views = [pair_views(pair, heads) for pair in self.self_pairs]
            self.self_keys[:], self.self_values[:] = [keys for keys, _ in views], [values for _, values in views]

    def attention(self, layer: int, slots: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Self-attention keys and values of `layer` over slots 0..slots-1 (views, made once per cache rows)."""
        key = (layer, slots)
        if key not in self.attention_views:
            self.attention_views[key] = (self.self_keys[layer][:, :, :slots], self.self_values[layer][:, :, :slots])
        return self.attention_views[key]

    def copy_positions(self, moves: list[tuple[int, int, int, int]]) -> None:
        """For each (source, destination, begin, end): row destination's self-attention keys and values at
        positions begin..end-1 become row source's (block-layout keys move in whole blocks of 16; the
        destination's other positions in those blocks must be equal or unused). All moves read before any
        writes."""
        for keys, values in zip(self.self_keys, self.self_values):
            if is_blocked(keys):
                spans = [(begin // SLOT_MULTIPLE, padded(end) // SLOT_MULTIPLE) for _, _, begin, end in moves]
                parts = [keys[source, :, first:last].clone() for (source, _, _, _), (first, last) in zip(moves, spans)]
            else:
                spans = [(begin, end) for _, _, begin, end in moves]
                parts = [keys[source, :, begin:end].clone() for source, _, begin, end in moves]
            rows = [values[source, :, begin:end].clone() for source, _, begin, end in moves]
            for (_, destination, begin, end), (first, last), part, row in zip(moves, spans, parts, rows):
                if is_blocked(keys):
                    keys[destination, :, first:last] = part
                else:
                    keys[destination, :, first:last] = part
                values[destination, :, begin:end] = row


def _on(rows: torch.Tensor, device: torch.device, memo: dict) -> torch.Tensor:
    """`rows` on `device`, copied there once per keep (memo)."""
    if rows.device == device:
        return rows
    key = ("rows", str(device), tuple(rows.tolist()))
    if key not in memo:
        memo[key] = rows.to(device)
    return memo[key]
