"""The main causal LM itself, int8 dynamically quantized (nn.Linear layers), as drafter: no second model, the
same tokenizer, and on CPU a cheaper step that agrees with the float model almost always."""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn

from ...errors import ModelError
from .assistant import TextAssistantDrafter


def quantize_causal_lm(model: nn.Module) -> nn.Module:
    """An int8 dynamically quantized copy of `model` (CPU only). Quantization replaces only the nn.Linear layers,
    so a float32 model's embeddings and norms are shared, not copied (Gemma 3's embedding alone is 671 MB)."""
    if next(model.parameters()).device.type != "cpu":
        raise ModelError("the quantized-self drafter needs the main model on the CPU (torch dynamic int8 "
                         "quantization is CPU-only); use --mode assistant or early-exit on a GPU")
    shared = {}
    if all(parameter.dtype == torch.float32 for parameter in model.parameters()):
        outside_linear = {id(parameter) for module in model.modules() if not isinstance(module, nn.Linear)
                          for parameter in module.parameters(recurse=False)}
        shared = {id(parameter): parameter for parameter in model.parameters() if id(parameter) in outside_linear}
    shell = copy.deepcopy(model, memo=shared).eval()
    if not shared:
        shell.float()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch announces the move of this API to torchao
        return torch.ao.quantization.quantize_dynamic(shell, {nn.Linear}, dtype=torch.qint8, inplace=True)


class TextQuantizedSelfDrafter(TextAssistantDrafter):
    name = "quantized-self"

    def __init__(self, main_model: nn.Module, confidence_threshold: float = 0.0):
        super().__init__(quantize_causal_lm(main_model), None, confidence_threshold)
