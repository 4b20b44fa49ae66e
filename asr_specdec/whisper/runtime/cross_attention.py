"""One decoder pass over a whole token sequence that also returns the cross-attention scores of chosen heads.

Word timestamps read where the model's alignment heads look in the audio while it reads each token. The
engine's decoder (decoder.py) never materialises attention weights (it calls the fused attention kernel), so
this module runs the same layers once more, for one row, without a cache, and keeps the query-key scores of
the requested (layer, head) pairs. It touches nothing in the engine's decoder and reads only its layers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .decoder import WhisperDecoderRunner, linear_as_inputs, transposed_keys


def default_alignment_heads(model) -> list[tuple[int, int]]:
    """The model's `alignment_heads` (generation config), else every head of the second half of the decoder
    layers, as openai does for models that do not name theirs."""
    heads = getattr(model.generation_config, "alignment_heads", None)
    if heads:
        return [(int(layer), int(head)) for layer, head in heads]
    layers, per_layer = model.config.decoder_layers, model.config.decoder_attention_heads
    return [(layer, head) for layer in range(layers // 2, layers) for head in range(per_layer)]


def decode_with_cross_attention(runner: WhisperDecoderRunner, cross_keys: list[torch.Tensor],
                                cross_values: list[torch.Tensor], tokens: list[int],
                                heads: list[tuple[int, int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(vocabulary logits [n, vocab], cross-attention scores [len(heads), n, frames] before the softmax) for
    `tokens` at positions 0..n-1 of one row, whose cross-attention keys/values per layer are in the decoder
    cache's layout. The arithmetic is the engine decoder's PyTorch path (decoder.py), each weight in the inputs'
    dtype (widened where it is stored in 16 bits: lean_model.py)."""
    length = len(tokens)
    ids = torch.tensor([tokens], device=runner.device)
    hidden = runner.decoder.embed_tokens(ids) + runner.decoder.embed_positions.weight[:length]
    causal = torch.ones(length, length, dtype=torch.bool, device=ids.device).tril()
    wanted: dict[int, list[int]] = {}
    for layer, head in heads:
        wanted.setdefault(layer, []).append(head)
    captured: dict[tuple[int, int], torch.Tensor] = {}
    for index, layer in enumerate(runner.layers):
        residual = hidden
        normed = layer.self_attn_layer_norm(hidden)
        attention = layer.self_attn
        query = _split_heads(runner, linear_as_inputs(attention.q_proj, normed) * runner.scaling)
        keys = _split_heads(runner, linear_as_inputs(attention.k_proj, normed))
        values = _split_heads(runner, linear_as_inputs(attention.v_proj, normed))
        attended = F.scaled_dot_product_attention(query, keys, values, attn_mask=causal, scale=1.0)
        hidden = residual + linear_as_inputs(attention.out_proj, attended.transpose(1, 2).reshape(1, length, -1))

        residual = hidden
        normed = layer.encoder_attn_layer_norm(hidden)
        cross = layer.encoder_attn
        query = _split_heads(runner, linear_as_inputs(cross.q_proj, normed) * runner.scaling)
        frames = cross_values[index].shape[2]
        scores = query @ transposed_keys(cross_keys[index], frames).to(query.dtype)
        for head in wanted.get(index, []):
            captured[(index, head)] = scores[0, head]
        attended = scores.softmax(dim=-1) @ cross_values[index].to(query.dtype)
        hidden = residual + linear_as_inputs(cross.out_proj, attended.transpose(1, 2).reshape(1, length, -1))

        residual = hidden
        normed = layer.final_layer_norm(hidden)
        hidden = residual + linear_as_inputs(layer.fc2, layer.activation_fn(linear_as_inputs(layer.fc1, normed)))
    logits = runner.vocabulary_logits(runner.decoder.layer_norm(hidden))[0]
    return logits, torch.stack([captured[pair] for pair in heads if pair in captured])


def _split_heads(runner: WhisperDecoderRunner, states: torch.Tensor) -> torch.Tensor:
    batch, length, _ = states.shape
    return states.view(batch, length, runner.num_heads, runner.head_dim).transpose(1, 2)
