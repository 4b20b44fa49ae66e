"""The decoder's PyTorch backend: a pass layer by layer in the model's own dtype, on any device.

It runs where the native kernels do not (no kernel build, ASR_SPECDEC_NATIVE=0, a GPU). Its keys are in the
column layout (kv_cache.py), so attention is one product on a view of the cache; a pass uploads its token ids
and row starts in one transfer and waits for the device nowhere (the caller reads the greedy choices back).
The arithmetic mirrors transformers' `WhisperDecoderLayer` (queries scaled before attention, pre-norm residual
blocks, GELU feed-forward), so its greedy tokens match `generate()`.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ...core.argmax import CertifiedArgmax
from ...core.projection import project_rows, row_blocked
from .decoder_backend import full_argmax
from .kv_cache import KVCache, is_blocked, key_columns, write_keys
from .lean_model import widen_linears
from .step_graphs import Passes, choose_passes

ATTENDED_MULTIPLE = 64  # a step attends over the cache's first slots rounded up to this: few distinct shapes


@dataclass(frozen=True)
class Context:
    """Where a PyTorch pass writes (rows [batch, 1], slots [batch, n]) and what each token sees over slots
    0..end-1 (`end` a multiple of ATTENDED_MULTIPLE or every slot): `additive` [batch, 1, n, end] is 0 where
    seen, -inf elsewhere, in the pass's dtype."""

    rows: torch.Tensor
    slots: torch.Tensor
    end: int
    additive: torch.Tensor

    @property
    def mask(self) -> torch.Tensor:
        """[batch, 1, n, end]: True where a token sees a slot."""
        return self.additive == 0


_FUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # self-attention module -> (key, weight, bias)


def fused_projection(attention: nn.Module) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(weight [3 * width, width], bias) of the queries, keys and values of a self-attention module, made once
    per module and shared by every runner over it (a drafter's early exit reads the main model's); None when
    they are not three plain linear layers (a quantized copy's)."""
    parts = (attention.q_proj, attention.k_proj, attention.v_proj)
    if not all(type(part) is nn.Linear for part in parts):
        return None
    key = tuple((part.weight.data_ptr(), part.weight.dtype, part.weight.device) for part in parts)
    held = _FUSED.get(attention)
    if held is None or held[0] != key:
        weight = torch.cat([part.weight for part in parts])
        bias = torch.cat([part.bias if part.bias is not None else torch.zeros_like(part.weight[:, 0])
                          for part in parts])
        held = _FUSED[attention] = (key, weight, bias)
    return held[1], held[2]


def attended_slots(cache: KVCache, starts: list[int], length: int) -> int:
    """The slots a pass attends over: slots.max() + 1 (from the host's starts: no wait for the device) rounded up
    to ATTENDED_MULTIPLE, at most every slot."""
    used = min(max(starts) + length - 1, cache.max_positions) + 1
    return min(-(-used // ATTENDED_MULTIPLE) * ATTENDED_MULTIPLE, cache.slots)


def merge_heads(attended: torch.Tensor) -> torch.Tensor:
    """[batch, heads, n, head_dim] as [batch, n, heads * head_dim]: a view when each position's heads lie side by
    side in memory (the fused attention kernels lay their output out like the queries), else a copy."""
    batch, heads, length, head_dim = attended.shape
    stride = attended.stride()
    if stride[1] == head_dim and stride[3] == 1 and (length == 1 or stride[2] == heads * head_dim):
        return attended.as_strided((batch, length, heads * head_dim), (stride[0], stride[2], 1))
    return attended.transpose(1, 2).reshape(batch, length, heads * head_dim)


class TorchBackend:
    name = "pytorch"
    blocked = False
    shares_cross = False  # every row has its own cross states (KVCache.cross_rows stays None)
    batch_invariant = False  # a product's rounding may depend on how many rows its pass holds
    native_decoder = None

    def __init__(self, decoder: nn.Module, proj_out: nn.Module, layers: list, kv_dtype: torch.dtype | None = None):
        self.decoder, self.proj_out, self.layers = decoder, proj_out, layers
        first_attention = layers[0].self_attn
        self.num_heads, self.head_dim = first_attention.num_heads, first_attention.head_dim
        self.scaling = first_attention.scaling
        self.max_positions = decoder.embed_positions.weight.shape[0]
        weight = decoder.embed_tokens.weight
        widen_linears(nn.ModuleList(layers), weight.dtype)  # this path runs the layers' own forward
        self.device = weight.device
        self.weights = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}.get(
            weight.dtype)
        self.dtype = self.cross_dtype = self.cross_compute = weight.dtype
        self.kv_dtype = kv_dtype or weight.dtype
        self._certified: CertifiedArgmax | None = None
        self.passes: Passes = choose_passes(self.device)

    # ------------------------------------------------------------------ the protocol

    def hidden_states(self, cache: KVCache, token_ids: torch.Tensor, starts: list[int]) -> torch.Tensor:
        return self.final_hidden(self.layer_steps(cache, token_ids, starts))

    def feed_rows(self, cache: KVCache, feeds: list[list[int]], starts: list[int]) -> list[torch.Tensor]:
        length = max(len(feed) for feed in feeds)
        padding = 0
        row_starts = [start if feed else cache.max_positions for feed, start in zip(feeds, starts)]
        # ids and starts in one upload: [batch, n + 1]
        table = torch.tensor([(feed + [padding] * (length - len(feed))) + [start]
                              for feed, start in zip(feeds, row_starts)], device=self.device)

        def run(table: torch.Tensor) -> torch.Tensor:
            return self.final_hidden(self.layer_steps(cache, table[:, :length], row_starts, table[:, length]))

        hidden = self.passes.hidden(run, cache, table, (attended_slots(cache, row_starts, length),))
        return [hidden[row, :len(feed)] for row, feed in enumerate(feeds)]

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """proj_out(hidden); several rows at once as weight @ hidden^T in blocks (see projection.py)."""
        if hidden.shape[0] == 1 or not row_blocked(self.proj_out):
            return self.proj_out(hidden)
        return project_rows(self.proj_out.weight, hidden)

    def greedy(self, hidden: torch.Tensor, suppressed: torch.Tensor | None, group_begins: list[int | None] | None,
               certified: bool) -> torch.Tensor:
        grouped = group_begins is not None and any(begin is not None for begin in group_begins)
        if (certified and not grouped and row_blocked(self.proj_out)
                and self.proj_out.weight.dtype == torch.float32):
            if self._certified is None:
                self._certified = CertifiedArgmax(self.proj_out.weight)
            return self._certified(hidden, suppressed)
        return full_argmax(self, hidden, suppressed, group_begins)

    # ------------------------------------------------------------------ layer by layer

    @staticmethod
    def final_hidden(steps) -> torch.Tensor:
        for index, _, hidden, _ in steps:
            if index is None:
                return hidden
        raise AssertionError("unreachable")

    def layer_steps(self, cache: KVCache, token_ids: torch.Tensor, starts: list[int],
                    row_starts: torch.Tensor | None = None):
        """The pass as a generator: yields (layer index, layer, hidden states entering it, attention context)
        before each layer and finally (None, None, final hidden states, context). `row_starts`: `starts` already
        on the device."""
        batch, length = token_ids.shape
        device = token_ids.device
        if row_starts is None:
            row_starts = torch.tensor(starts, device=device)
        position_ids = row_starts[:, None] + torch.arange(length, device=device)
        slots = position_ids.clamp_max(cache.max_positions)
        end = attended_slots(cache, starts, length)
        unseen = (torch.arange(end, device=device) > position_ids[..., None])[:, None]
        dtype = self.decoder.embed_tokens.weight.dtype
        additive = torch.zeros(unseen.shape, dtype=dtype, device=device).masked_fill_(unseen, -float("inf"))
        context = Context(rows=torch.arange(batch, device=device)[:, None], slots=slots, end=end, additive=additive)
        positions = self.decoder.embed_positions.weight[position_ids.clamp_max(self.max_positions - 1)]
        hidden = self.decoder.embed_tokens(token_ids) + positions
        fixed = self.fixed_step(cache, dtype)
        for index, layer in enumerate(self.layers):
            yield index, layer, hidden, context
            if fixed:
                hidden = self.step_layer(cache, index, layer, hidden, context)
                continue
            hidden = self.self_attention(cache, index, layer, hidden, context)
            hidden = self.cross_attention(cache, index, layer, hidden)[0]
            hidden = self.feed_forward(layer, hidden)
        yield None, None, self.decoder.layer_norm(hidden), context

    @staticmethod
    def fixed_step(cache: KVCache, dtype: torch.dtype) -> bool:
        """Whether a pass over `cache` takes `step_layer`: a cache of this backend (pairs) in the weights' dtype
        (another backend's cache, read through `self_attention` and `cross_attention`, does not)."""
        return (cache.self_pairs is not None and cache.self_pairs[0].dtype == dtype
                and cache.cross_values[0].dtype == dtype and not is_blocked(cache.cross_keys[0]))

    def step_layer(self, cache: KVCache, index: int, layer, hidden: torch.Tensor, context: Context):
        """One decoder layer of a step (see the module's docstring): the same arithmetic as `self_attention`,
        `cross_attention` and `feed_forward` in fewer operations."""
        batch, length, width = hidden.shape
        heads, head_dim = self.num_heads, self.head_dim
        attention = layer.self_attn
        normed, fused = layer.self_attn_layer_norm(hidden), fused_projection(attention)
        if fused is not None:
            projected = F.linear(normed, *fused)  # [batch, n, 3 * width]
        else:  # a quantized copy's three layers
            projected = torch.cat([part(normed) for part in (attention.q_proj, attention.k_proj, attention.v_proj)], -1)
        cache.self_pairs[index].index_put_((context.rows, context.slots), projected[..., width:])
        query = projected.as_strided((batch, heads, length, head_dim), (length * 3 * width, head_dim, 3 * width, 1))
        keys, values = cache.attention(index, context.end)
        attended = F.scaled_dot_product_attention(query, keys, values, attn_mask=context.additive,
                                                  scale=self.scaling)
        hidden = hidden + attention.out_proj(merge_heads(attended))
        cross = layer.encoder_attn
        query = cross.q_proj(layer.encoder_attn_layer_norm(hidden)).contiguous()  # a no-op: a linear's output
        query = query.as_strided((batch, heads, length, head_dim), (length * width, head_dim, width, 1))
        attended = F.scaled_dot_product_attention(query, cache.cross_keys[index], cache.cross_values[index],
                                                  scale=self.scaling)
        hidden = hidden + cross.out_proj(merge_heads(attended))
        return self.feed_forward(layer, hidden)

    def _split_heads(self, states: torch.Tensor) -> torch.Tensor:
        batch, length, _ = states.shape
        return states.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def self_attention(self, cache: KVCache, index: int, layer, hidden: torch.Tensor, context: Context):
        """hidden + self-attention block of layer `index`; writes this pass's keys and values to the cache."""
        batch, length, _ = hidden.shape
        attention = layer.self_attn
        normed = layer.self_attn_layer_norm(hidden)
        query = self._split_heads(attention.q_proj(normed) * self.scaling)
        keys = attention.k_proj(normed).view(batch, length, self.num_heads, self.head_dim)
        values = attention.v_proj(normed).view(batch, length, self.num_heads, self.head_dim)
        write_keys(cache.self_keys[index], context.rows, context.slots, keys.to(cache.self_keys[index].dtype))
        cache.self_values[index].permute(0, 2, 1, 3)[context.rows, context.slots] = values.to(
            cache.self_values[index].dtype)
        scores = query @ key_columns(cache.self_keys[index], context.end).to(query.dtype)
        scores = scores.masked_fill(~context.mask, -float("inf"))
        attended = scores.softmax(dim=-1) @ cache.self_values[index][:, :, :context.end].to(query.dtype)
        return hidden + attention.out_proj(attended.transpose(1, 2).reshape(batch, length, -1))

    def cross_attention(self, cache: KVCache, index: int, layer, hidden: torch.Tensor):
        """(hidden + cross-attention block of layer `index`, attention probabilities [batch, heads, n, frames])."""
        batch, length, _ = hidden.shape
        cross = layer.encoder_attn
        query = self._split_heads(cross.q_proj(layer.encoder_attn_layer_norm(hidden)) * self.scaling)
        frames = cache.encoder_length
        probabilities = (query @ key_columns(cache.cross_keys[index], frames).to(query.dtype)).softmax(dim=-1)
        attended = probabilities @ cache.cross_values[index].to(query.dtype)
        return hidden + cross.out_proj(attended.transpose(1, 2).reshape(batch, length, -1)), probabilities

    def feed_forward(self, layer, hidden: torch.Tensor) -> torch.Tensor:
        return hidden + layer.fc2(layer.activation_fn(layer.fc1(layer.final_layer_norm(hidden))))
