"""Any transformers causal LM (`AutoModelForCausalLM`) as the engine's `Target`: a KV cache addressed by
position, where feeding tokens at `start` first drops whatever the cache holds from `start` on; plus what the
text drafters need to know about such a model (its layers, context length, vocabulary, end ids)."""

from __future__ import annotations

import contextlib
import inspect

import torch
from torch import nn

from ..core.projection import project_rows, row_blocked
from ..errors import ModelError


def text_config(model: nn.Module):
    return model.config.get_text_config(decoder=True)


def decoder_layers(model: nn.Module) -> tuple[str, str]:
    """(inner model attribute, layer list attribute): ("model", "layers") for Llama-style models
    (Llama, Mistral, Qwen, Gemma, SmolLM), ("transformer", "h") for GPT-2-style ones."""
    for inner_name, layers_name in (("model", "layers"), ("transformer", "h")):
        inner = getattr(model, inner_name, None)
        if isinstance(getattr(inner, layers_name, None), nn.ModuleList):
            return inner_name, layers_name
    raise ModelError(f"{type(model).__name__} has neither model.layers (Llama-style) nor transformer.h (GPT-2-style) "
                     "decoder layers")


def num_layers(model: nn.Module) -> int:
    inner_name, layers_name = decoder_layers(model)
    return len(getattr(getattr(model, inner_name), layers_name))


def context_length(model: nn.Module) -> int:
    config = text_config(model)
    for name in ("max_position_embeddings", "n_positions"):
        if getattr(config, name, None):
            return int(getattr(config, name))
    raise ModelError(f"{type(model).__name__}'s config gives no context length (max_position_embeddings)")


def vocab_size(model: nn.Module) -> int:
    return model.get_output_embeddings().weight.shape[0]


def model_device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def full_attention_cache(layers: int):
    """A DynamicCache whose every layer keeps all positions, created up front so that drafters can share layers.

    Sliding-window layers (Gemma 2/3, Mistral) would keep only the last `window - 1` positions, and rolling
    back a rejected draft past that is impossible. Keeping them whole costs memory only: the model still builds
    its sliding-window mask from absolute positions, so each layer attends to exactly the same keys.
    """
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache()
    cache.layers = [DynamicLayer() for _ in range(layers)]
    return cache


def crop_cache(cache, length: int) -> None:
    """Drop every position >= `length`, layer by layer (an early-exit drafter may have filled the layers it
    shares further than the rest)."""
    for layer in cache.layers:
        held = layer.get_seq_length()
        if held > length:
            layer.crop(length - held)  # transformers' crop takes minus the number of positions to remove


class RowBlockedHead(nn.Module):
    """A bias-free float32 output projection computed as weight @ hidden^T in blocks of rows (projection.py).

    On one thread, Gemma 3's 262,144-word head took 56 ms for one row, 126 ms for two rows and 122 ms for five
    the usual way, 33 ms and 65 ms this way. One row (every plain greedy step) keeps the standard call, so
    plain decoding stays bit-identical to transformers' generate().
    """

    def __init__(self, head: nn.Linear):
        super().__init__()
        self.head = head

    @staticmethod
    def fits(head: nn.Module) -> bool:
        return row_blocked(head) and head.weight.dtype == torch.float32

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        *leading, width = hidden.shape
        flat = hidden.reshape(-1, width)
        if flat.shape[0] == 1:
            return self.head(hidden)
        return project_rows(self.head.weight, flat).view(*leading, -1)


@contextlib.contextmanager
def row_blocked_head(model: nn.Module, rows: int):
    """Within the block, `model` projects several rows with a RowBlockedHead (its own head is put back after)."""
    head = model.get_output_embeddings()
    name = next((name for name, child in model.named_children() if child is head), None)
    if rows < 2 or name is None or not RowBlockedHead.fits(head):
        yield
        return
    model._modules[name] = RowBlockedHead(head)
    try:
        yield
    finally:
        model._modules[name] = head


class CausalLMTarget:
    """A causal LM as the engine's `Target`, over a transformers DynamicCache."""

    def __init__(self, model: nn.Module, cache=None, max_positions: int | None = None):
        self.model = model
        self.cache = cache if cache is not None else full_attention_cache(num_layers(model))
        self.max_positions = max_positions or context_length(model)
        self.device = model_device(model)
        # transformers 5.24 renamed forward's past_key_values to cache (the old name warns); older ones know only it
        self.cache_argument = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    def _run(self, token_ids: list[int], start: int, rows: int) -> torch.Tensor:
        held = min(layer.get_seq_length() for layer in self.cache.layers)
        if start > held:
            raise ValueError(f"cannot feed position {start}: the cache holds only {held} positions")
        if start + len(token_ids) > self.max_positions:
            raise ValueError(f"positions up to {start + len(token_ids)} exceed the model's {self.max_positions}")
        crop_cache(self.cache, start)
        ids = torch.tensor([token_ids], dtype=torch.long, device=self.device)
        positions = torch.arange(start, start + len(token_ids), device=self.device).unsqueeze(0)
        with row_blocked_head(self.model, rows or len(token_ids)):
            output = self.model(input_ids=ids, position_ids=positions, **{self.cache_argument: self.cache},
                                use_cache=True, logits_to_keep=rows)
        return output.logits[0]

    def extend(self, token_ids: list[int], start: int, scored: int | None = None) -> torch.Tensor:
        """Feed tokens at positions start.. (dropping anything cached there and after); logits [scored, vocab]
        of the last `scored` of them (all when None): the output projection over a large vocabulary can cost
        more than the decoder layers, so rows nobody reads are not computed."""
        return self._run(token_ids, start, 0 if scored is None else scored)  # logits_to_keep=0: every row


def eos_token_ids(model: nn.Module, tokenizer=None) -> list[int]:
    """End-of-sequence ids as transformers' generate uses them: the generation config's, else the tokenizer's."""
    config = getattr(model, "generation_config", None)
    ids = getattr(config, "eos_token_id", None) if config is not None else None
    if ids is None:
        ids = getattr(text_config(model), "eos_token_id", None)
    if ids is None and tokenizer is not None:
        ids = tokenizer.eos_token_id
    if ids is None:
        return []
    return [int(ids)] if isinstance(ids, int) else [int(i) for i in ids]
