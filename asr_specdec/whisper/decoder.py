"""A lean Whisper decoder over a static KV cache, for one utterance or a batch of rows at their own positions.

transformers' decoder forward builds masks, cache objects and output dataclasses on every call, and its
dynamic cache grows by concatenation. Speculative decoding calls the decoder many times with a handful of
tokens, so the engine runs the same weights through this module instead: keys and values live in
preallocated buffers, a forward pass writes its tokens at an explicit position, and rolling back after a
rejected draft costs nothing (the next pass simply writes over the rejected slots).

Batches of rows (see batch.py for why this keeps batched speculation exact): every row has its own start
position. A pass feeds each row its own tokens, padded to the longest feed; keys and values are written at
each row's own positions, and a per-row causal mask lets token i of row b see positions <= start_b + i only.
Slots past a row's valid length may hold anything (rejected drafts, padding): they are never attended,
because the next pass that reaches them writes them first. Padding positions past the model's limit all
write to one scratch slot beyond it.

The arithmetic mirrors transformers' `WhisperDecoderLayer` (queries scaled before attention, pre-norm
residual blocks, GELU feed-forward), so its greedy tokens match `generate()`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..core.argmax import CertifiedArgmax
from ..core.projection import project_rows, row_blocked


@dataclass
class KVCache:
    """Self-attention keys/values per layer, [batch, heads, max_positions + 1, head_dim] (the last slot is the
    scratch slot for padding), plus the fixed cross-attention keys/values computed once from the encoder
    output."""

    self_keys: list[torch.Tensor]
    self_values: list[torch.Tensor]
    cross_keys: list[torch.Tensor]
    cross_values: list[torch.Tensor]

    @property
    def max_positions(self) -> int:
        return self.self_keys[0].shape[2] - 1

    @property
    def batch_size(self) -> int:
        return self.self_keys[0].shape[0]

    def keep(self, rows: torch.Tensor, memo: dict) -> None:
        """Keep only the batch rows `rows`, in place. Tensors shared with other caches (a drafter reads the main
        model's cross-attention states) are compacted once per `memo`, so they stay shared."""
        if id(self) in memo:
            return
        memo[id(self)] = self
        for states in (self.self_keys, self.self_values, self.cross_keys, self.cross_values):
            for index, tensor in enumerate(states):
                if id(tensor) not in memo:  # the old tensor stays in memo so its id is not reused meanwhile
                    memo[id(tensor)] = (tensor, tensor.index_select(0, rows))
                states[index] = memo[id(tensor)][1]


def decoder_parts(model: nn.Module) -> tuple[nn.Module, nn.Module]:
    """(decoder, proj_out) of a WhisperForConditionalGeneration or a decoder-only WhisperForCausalLM."""
    inner = model.model
    decoder = inner.decoder
    return decoder, model.proj_out


class WhisperDecoderRunner:
    """Runs the first `num_layers` layers of a Whisper decoder (all by default) and the output projection.

    With fewer layers than the model has, this is the early-exit (LayerSkip-style) drafter: the same
    weights, cut short, then the final layer norm and vocabulary projection.
    """

    def __init__(self, model: nn.Module, num_layers: int | None = None):
        self.decoder, self.proj_out = decoder_parts(model)
        total = len(self.decoder.layers)
        self.num_layers = total if num_layers is None else num_layers
        if not 1 <= self.num_layers <= total:
            raise ValueError(f"layer count {self.num_layers} out of range 1..{total}")
        self.layers = list(self.decoder.layers[: self.num_layers])
        first_attention = self.layers[0].self_attn
        self.num_heads = first_attention.num_heads
        self.head_dim = first_attention.head_dim
        self.scaling = first_attention.scaling
        self.max_positions = self.decoder.embed_positions.weight.shape[0]
        weight = self.decoder.embed_tokens.weight
        self.dtype = weight.dtype
        self.device = weight.device
        self.vocab_size = weight.shape[0]
        # greedy choices without the full float32 projection (core/argmax.py); False: always the full logits
        self.certified_argmax = True
        self._certified: CertifiedArgmax | None = None

    def _split_heads(self, states: torch.Tensor) -> torch.Tensor:
        batch, length, _ = states.shape
        return states.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def cross_attention_states(self, encoder_output: torch.Tensor) -> tuple[list, list]:
        """Keys and values of every used layer's cross-attention over the encoder output (computed once)."""
        keys, values = [], []
        for layer in self.layers:
            keys.append(self._split_heads(layer.encoder_attn.k_proj(encoder_output)).contiguous())
            values.append(self._split_heads(layer.encoder_attn.v_proj(encoder_output)).contiguous())
        return keys, values

    def new_cache(self, encoder_output: torch.Tensor, cross_states: tuple[list, list] | None = None,
                  max_positions: int | None = None) -> KVCache:
        """A cache for a batch of utterances (one row each). `cross_states` lets a drafter reuse the main
        model's."""
        batch = encoder_output.shape[0]
        positions = min(max_positions or self.max_positions, self.max_positions)
        shape = (batch, self.num_heads, positions + 1, self.head_dim)
        cross_keys, cross_values = cross_states or self.cross_attention_states(encoder_output)
        return KVCache(
            self_keys=[torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in self.layers],
            self_values=[torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in self.layers],
            cross_keys=cross_keys[: self.num_layers],
            cross_values=cross_values[: self.num_layers],
        )

    def forward(self, cache: KVCache, token_ids: torch.Tensor, start: int, scored: int | None = None) -> torch.Tensor:
        """Feed `token_ids` [batch, n] at positions start..start+n-1 of every row; return logits
        [batch, scored, vocab] of the last `scored` positions (all n when None).

        Whatever the cache held at those positions and beyond is overwritten or ignored.
        """
        length = token_ids.shape[1]
        if start + length > cache.max_positions:
            raise ValueError(f"decoder positions {start + length} exceed the model's {cache.max_positions}")
        hidden = self.hidden_states(cache, token_ids, start)
        if scored is not None:
            hidden = hidden[:, length - scored:]
        return self.vocabulary_logits(hidden)

    def hidden_states(self, cache: KVCache, token_ids: torch.Tensor, starts: int | list[int]) -> torch.Tensor:
        """Feed `token_ids` [batch, n], row b at positions starts[b].. (an int: the same for every row); return
        the final layer norm's output [batch, n, width]. Positions past the model's limit (padding only) go to
        the scratch slot."""
        batch, length = token_ids.shape
        if not isinstance(starts, int) and len(set(starts)) == 1:
            starts = starts[0]
        if isinstance(starts, int):
            start, end = starts, starts + length
            positions = self.decoder.embed_positions.weight[start:end]
            write = (slice(None), slice(None), slice(start, end))
            causal_mask = None
            if length > 1:
                causal_mask = torch.ones(length, end, dtype=torch.bool, device=token_ids.device).tril(start)
        else:
            row_starts = torch.tensor(starts, device=token_ids.device)
            position_ids = row_starts[:, None] + torch.arange(length, device=token_ids.device)
            positions = self.decoder.embed_positions.weight[position_ids.clamp_max(self.max_positions - 1)]
            slots = position_ids.clamp_max(cache.max_positions)
            write = (torch.arange(batch, device=token_ids.device)[:, None], slice(None), slots)
            end = int(slots.max()) + 1
            causal_mask = (torch.arange(end, device=token_ids.device) <= position_ids[..., None])[:, None]
        hidden = self.decoder.embed_tokens(token_ids) + positions
        for index, layer in enumerate(self.layers):
            residual = hidden
            normed = layer.self_attn_layer_norm(hidden)
            attention = layer.self_attn
            query = self._split_heads(attention.q_proj(normed) * self.scaling)
            keys, values = attention.k_proj(normed), attention.v_proj(normed)
            if isinstance(starts, int):
                keys, values = self._split_heads(keys), self._split_heads(values)
            else:  # advanced indices on dims 0 and 2 put those dims first: [batch, n, heads, head_dim]
                keys = keys.view(batch, length, self.num_heads, self.head_dim)
                values = values.view(batch, length, self.num_heads, self.head_dim)
            cache.self_keys[index][write] = keys
            cache.self_values[index][write] = values
            attended = F.scaled_dot_product_attention(
                query, cache.self_keys[index][:, :, :end], cache.self_values[index][:, :, :end],
                attn_mask=causal_mask, scale=1.0,
            )
            hidden = residual + attention.out_proj(attended.transpose(1, 2).reshape(batch, length, -1))

            residual = hidden
            normed = layer.encoder_attn_layer_norm(hidden)
            cross = layer.encoder_attn
            query = self._split_heads(cross.q_proj(normed) * self.scaling)
            attended = F.scaled_dot_product_attention(
                query, cache.cross_keys[index], cache.cross_values[index], scale=1.0
            )
            hidden = residual + cross.out_proj(attended.transpose(1, 2).reshape(batch, length, -1))

            residual = hidden
            normed = layer.final_layer_norm(hidden)
            hidden = residual + layer.fc2(layer.activation_fn(layer.fc1(normed)))
        return self.decoder.layer_norm(hidden)

    def vocabulary_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """proj_out(hidden); several rows at once as weight @ hidden^T in blocks (see projection.py)."""
        batch, length, width = hidden.shape
        if batch * length == 1 or not row_blocked(self.proj_out):
            return self.proj_out(hidden)
        return project_rows(self.proj_out.weight, hidden.reshape(batch * length, width)).view(batch, length, -1)

    def greedy_choices(self, hidden: torch.Tensor, suppressed: torch.Tensor | None) -> torch.Tensor:
        """argmax of the vocabulary logits of `hidden` [rows, width] with `suppressed` [rows, vocab] excluded."""
        if self.certified_argmax and row_blocked(self.proj_out) and self.proj_out.weight.dtype == torch.float32:
            if self._certified is None:
                self._certified = CertifiedArgmax(self.proj_out.weight)
            return self._certified(hidden, suppressed)
        logits = self.vocabulary_logits(hidden[None])[0]
        if suppressed is not None:
            logits = logits.masked_fill(suppressed, -float("inf"))
        return logits.argmax(dim=-1)


class DecoderTarget:
    """A Whisper decoder and its cache as the engine's target: one sequence (`extend`) or a batch of rows, each
    at its own position (`extend_rows`)."""

    def __init__(self, runner: WhisperDecoderRunner, cache: KVCache):
        self.runner, self.cache = runner, cache
        self.max_positions = cache.max_positions

    def extend(self, token_ids: list[int], start: int, scored: int | None = None) -> torch.Tensor:
        ids = torch.tensor([token_ids], dtype=torch.long, device=self.runner.device)
        return self.runner.forward(self.cache, ids, start, scored)[0]

    def extend_rows(self, feeds: list[list[int]], starts: list[int], scored: list[int]) -> list[torch.Tensor]:
        """Feed row b `feeds[b]` at positions starts[b]..; logits [scored[b], vocab] of its last scored[b] tokens.
        A row with nothing to feed (it is not drafting this step) gets one padding token in the scratch slot."""
        if len(feeds) == 1 and self.cache.batch_size == 1:
            return [self.extend(feeds[0], starts[0], scored[0])]
        hidden = self._hidden_rows(feeds, starts)
        picked = [hidden[row, len(feed) - count: len(feed)] for row, (feed, count) in enumerate(zip(feeds, scored))
                  if count]
        if not picked:
            return [hidden.new_empty(0, self.runner.vocab_size) for _ in feeds]
        logits = self.runner.vocabulary_logits(torch.cat(picked)[None])[0].split([count for count in scored if count])
        rows = iter(logits)
        return [next(rows) if count else hidden.new_empty(0, self.runner.vocab_size) for count in scored]

    def _hidden_rows(self, feeds: list[list[int]], starts: list[int]) -> torch.Tensor:
        """Final hidden states [rows, longest feed, width]; rows padded, empty feeds into the scratch slot."""
        if len(feeds) != self.cache.batch_size:
            raise ValueError(f"{len(feeds)} rows fed to a cache of {self.cache.batch_size}")
        length = max(len(feed) for feed in feeds)
        padding = 0
        ids = [feed + [padding] * (length - len(feed)) if feed else [padding] * length for feed in feeds]
        row_starts = [start if feed else self.cache.max_positions for feed, start in zip(feeds, starts)]
        return self.runner.hidden_states(self.cache, torch.tensor(ids, device=self.runner.device), row_starts)

    def greedy_rows(self, feeds: list[list[int]], starts: list[int], scored: list[int],
                    rules: list[tuple]) -> list[list[int]]:
        """Like extend_rows, but the main model's greedy token at each scored position instead of its logits;
        rules[b] = (LogitRules, sequence index the row's first scored position predicts)."""
        hidden = self._hidden_rows(feeds, starts)
        picked = torch.cat([hidden[row, len(feed) - count: len(feed)]
                            for row, (feed, count) in enumerate(zip(feeds, scored))])
        masks = [row_rules.suppressed(first_index, count, self.runner.vocab_size, picked.device)
                 for (row_rules, first_index), count in zip(rules, scored)]
        mask = None
        if any(row_mask is not None for row_mask in masks):
            mask = torch.cat([row_mask if row_mask is not None else
                              torch.zeros(count, self.runner.vocab_size, dtype=torch.bool, device=picked.device)
                              for row_mask, count in zip(masks, scored)])
        choices = self.runner.greedy_choices(picked, mask).tolist()
        rows, begin = [], 0
        for count in scored:
            rows.append(choices[begin:begin + count])
            begin += count
        return rows

    def keep(self, rows: torch.Tensor, memo: dict) -> None:
        self.cache.keep(rows, memo)
