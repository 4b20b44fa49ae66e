"""A lean Whisper decoder over a static KV cache.

transformers' decoder forward builds masks, cache objects and output dataclasses on every call, and its
dynamic cache grows by concatenation. Speculative decoding calls the decoder many times with a handful of
tokens, so the engine runs the same weights through this module instead: keys and values live in
preallocated buffers, a forward pass writes its tokens at an explicit position, and rolling back after a
rejected draft costs nothing (the next pass simply writes over the rejected slots).

The arithmetic mirrors transformers' `WhisperDecoderLayer` (queries scaled before attention, pre-norm
residual blocks, GELU feed-forward), so its greedy tokens match `generate()`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

VERIFY_BLOCK = 8  # rows per vocabulary-projection block (see WhisperDecoderRunner.vocabulary_logits)


@dataclass
class KVCache:
    """Self-attention keys/values per layer, [batch, heads, max_positions, head_dim], plus the fixed
    cross-attention keys/values computed once from the encoder output."""

    self_keys: list[torch.Tensor]
    self_values: list[torch.Tensor]
    cross_keys: list[torch.Tensor]
    cross_values: list[torch.Tensor]

    @property
    def max_positions(self) -> int:
        return self.self_keys[0].shape[2]


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
        """A cache for one utterance batch. `cross_states` lets a drafter reuse the main model's."""
        batch = encoder_output.shape[0]
        positions = max_positions or self.max_positions
        shape = (batch, self.num_heads, positions, self.head_dim)
        cross_keys, cross_values = cross_states or self.cross_attention_states(encoder_output)
        return KVCache(
            self_keys=[torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in self.layers],
            self_values=[torch.zeros(shape, dtype=self.dtype, device=self.device) for _ in self.layers],
            cross_keys=cross_keys[: self.num_layers],
            cross_values=cross_values[: self.num_layers],
        )

    def forward(self, cache: KVCache, token_ids: torch.Tensor, start: int, scored: int | None = None) -> torch.Tensor:
        """Feed `token_ids` [batch, n] at positions start..start+n-1; return logits [batch, scored, vocab] of the
        last `scored` positions (all n when None).

        Whatever the cache held at those positions and beyond is overwritten or ignored.
        """
        batch, length = token_ids.shape
        end = start + length
        if end > cache.max_positions:
            raise ValueError(f"decoder positions {end} exceed the model's {cache.max_positions}")
        hidden = self.decoder.embed_tokens(token_ids) + self.decoder.embed_positions.weight[start:end]
        causal_mask = None
        if length > 1:
            causal_mask = torch.ones(length, end, dtype=torch.bool, device=token_ids.device).tril(start)
        for index, layer in enumerate(self.layers):
            residual = hidden
            normed = layer.self_attn_layer_norm(hidden)
            attention = layer.self_attn
            query = self._split_heads(attention.q_proj(normed) * self.scaling)
            cache.self_keys[index][:, :, start:end] = self._split_heads(attention.k_proj(normed))
            cache.self_values[index][:, :, start:end] = self._split_heads(attention.v_proj(normed))
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
        if scored is not None:
            hidden = hidden[:, length - scored:]
        return self.vocabulary_logits(self.decoder.layer_norm(hidden))

    def vocabulary_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """proj_out(hidden), for several rows at once as weight @ hidden^T in blocks of VERIFY_BLOCK rows.

        On a CPU the projection onto Whisper's 51,865-word vocabulary dominates a decoder pass, and MKL runs
        the usual hidden @ weight^T at compute speed once there is more than one row (a 9-row verification
        took 20-23 ms) but weight @ hidden^T near memory speed for up to about 11 rows (5-9 ms). A single row
        (every plain greedy step) keeps the standard call, so plain decoding stays bit-identical to
        transformers' generate().
        """
        batch, length, width = hidden.shape
        rows = batch * length
        weight = getattr(self.proj_out, "weight", None)
        if rows == 1 or type(self.proj_out) is not nn.Linear or self.proj_out.bias is not None or \
                weight.device.type != "cpu":
            return self.proj_out(hidden)
        flat = hidden.reshape(rows, width)
        block_rows = -(-rows // -(-rows // VERIFY_BLOCK))  # equal blocks: 9 rows go as 5 + 4, not 8 + 1
        blocks = [weight @ block.T for block in flat.split(block_rows)]  # each [vocab, block rows]
        return torch.cat(blocks, dim=1).T.contiguous().view(batch, length, -1)


class DecoderTarget:
    """The main model's decoder as the engine's `Target`."""

    def __init__(self, runner: WhisperDecoderRunner, cache: KVCache):
        self.runner, self.cache = runner, cache
        self.max_positions = cache.max_positions

    def extend(self, token_ids: list[int], start: int, scored: int | None = None) -> torch.Tensor:
        ids = torch.tensor([token_ids], dtype=torch.long, device=self.runner.device)
        return self.runner.forward(self.cache, ids, start, scored)[0]
