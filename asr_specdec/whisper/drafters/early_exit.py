"""Self-speculative drafting (LayerSkip style): the main decoder's first k layers, then its final layer
norm and output projection.

The drafter shares the main model's weights and its KV cache for those k layers: after each verification
the main pass has already written exact keys/values for every accepted token, so the drafter never
re-feeds the sequence; its own draft slots are overwritten by the next verification.
"""

from __future__ import annotations

from torch import nn

from ...core.model_drafter import ModelDrafter
from ...errors import ModelError
from ..runtime.decoder import DecoderTarget, KVCache, WhisperDecoderRunner, decoder_parts

MODE = "early-exit"


def build(context) -> EarlyExitDrafter:
    """The first `early_exit_layer` layers of the main decoder (half of them by default)."""
    layers = context.options.early_exit_layer or max(1, context.decoder_layers // 2)
    return EarlyExitDrafter(context.main, layers, context.options.confidence_threshold, weights=context.weights)


class EarlyExitDrafter(ModelDrafter):
    name = "early-exit"

    def __init__(self, main_model: nn.Module, exit_layer: int, confidence_threshold: float = 0.0,
                 weights: str | None = None):
        super().__init__(confidence_threshold)
        total = len(decoder_parts(main_model)[0].layers)
        if not 1 <= exit_layer < total:
            raise ModelError(f"early-exit layer {exit_layer} is out of range: the main decoder has {total} "
                             f"layers, so choose 1..{total - 1}")
        self.runner = WhisperDecoderRunner(main_model, num_layers=exit_layer, weights=weights)

    def start(self, context) -> None:
        super().start(context)
        main_cache: KVCache = context.main_cache
        self.target = DecoderTarget(self.runner, main_cache.first_layers(self.runner.num_layers))

    def _common_prefix(self, sequence: list[int], cached: list[int]) -> int:
        # after the first verification the shared cache holds every token but the last (the main pass wrote
        # them); before it, nothing: the main model feeds its prompt together with the first draft
        return len(sequence) - 1 if cached else 0
