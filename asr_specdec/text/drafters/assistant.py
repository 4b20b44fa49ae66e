"""A smaller causal LM with the main model's tokenizer as drafter: a ModelDrafter stepping a CausalLMTarget."""

from __future__ import annotations

from torch import nn

from ...core.model_drafter import ModelDrafter
from ...errors import ModelError
from ..target import CausalLMTarget, context_length, vocab_size


class TextAssistantDrafter(ModelDrafter):
    name = "assistant"

    def __init__(self, assistant_model: nn.Module, main_model: nn.Module | None = None,
                 confidence_threshold: float = 0.0):
        super().__init__(confidence_threshold)
        if main_model is not None and vocab_size(main_model) != vocab_size(assistant_model):
            raise ModelError(f"mode '{self.name}' needs the same tokenizer, but the main model has "
                             f"{vocab_size(main_model)} tokens and the assistant {vocab_size(assistant_model)}: use "
                             "--mode universal for a pair with different tokenizers")
        self.model = assistant_model.eval()

    def start(self, context) -> None:
        super().start(context)
        self.target = CausalLMTarget(self.model, max_positions=min(context.max_positions, context_length(self.model)))
