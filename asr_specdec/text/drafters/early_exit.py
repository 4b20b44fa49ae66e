"""Self-speculative drafting for causal LMs (LayerSkip style): the main model's first k decoder layers, then
its own final norm and output head, sharing every weight.

The drafter runs a view of the main model whose layer list is cut to k (so the model's own forward builds
embeddings, rotary positions, masks and logit soft-capping exactly as for the full model), and it shares the
main model's cache for those k layers: each verification pass writes exact keys/values for every accepted
token, so the drafter never re-feeds the sequence; its draft positions are overwritten by the next
verification.
"""

from __future__ import annotations

import copy

from torch import nn

from ...core.model_drafter import ModelDrafter
from ...errors import ModelError
from ..target import CausalLMTarget, decoder_layers, num_layers

LAYER_COUNT_NAMES = ("num_hidden_layers", "n_layer")


def _shallow(module: nn.Module) -> nn.Module:
    """A new module object sharing `module`'s parameters and children, with its own table of children."""
    view = copy.copy(module)
    view.__dict__["_modules"] = dict(module._modules)
    return view


def truncated_model(model: nn.Module, exit_layer: int) -> nn.Module:
    """`model` with only its first `exit_layer` decoder layers: shares all weights, changes nothing in `model`."""
    inner_name, layers_name = decoder_layers(model)
    config = copy.deepcopy(model.config)
    for name in LAYER_COUNT_NAMES:
        if hasattr(config, name):
            setattr(config, name, exit_layer)
    if getattr(config, "layer_types", None):
        config.layer_types = list(config.layer_types[:exit_layer])
    inner = _shallow(getattr(model, inner_name))
    inner.__dict__["_modules"][layers_name] = getattr(inner, layers_name)[:exit_layer]
    inner.__dict__["config"] = config
    outer = _shallow(model)
    outer.__dict__["_modules"][inner_name] = inner
    outer.__dict__["config"] = config
    return outer


class TextEarlyExitDrafter(ModelDrafter):
    name = "early-exit"

    def __init__(self, main_model: nn.Module, exit_layer: int, confidence_threshold: float = 0.0):
        super().__init__(confidence_threshold)
        total = num_layers(main_model)
        if not 1 <= exit_layer < total:
            raise ModelError(f"early-exit layer {exit_layer} is out of range: the main model has {total} decoder "
                             f"layers, so choose 1..{total - 1}")
        self.exit_layer = exit_layer
        self.model = truncated_model(main_model, exit_layer)

    def start(self, context) -> None:
        from transformers import DynamicCache

        super().start(context)
        shared = DynamicCache()
        shared.layers = context.main_cache.layers[: self.exit_layer]  # the same layer objects
        self.target = CausalLMTarget(self.model, cache=shared, max_positions=context.max_positions)

    def _common_prefix(self, sequence: list[int], cached: list[int]) -> int:
        # after the first verification the shared cache holds every token but the last (the main pass wrote
        # them); before it, nothing: the main model feeds its prompt together with the first draft
        return len(sequence) - 1 if cached else 0
