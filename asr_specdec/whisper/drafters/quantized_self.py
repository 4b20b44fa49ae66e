"""The main model's own decoder, int8 dynamically quantized, as drafter.

No second model to download, same tokenizer, and it shares the main encoder output and the main model's
cross-attention keys/values, so a draft step costs only the int8 decoder layers and projection.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn

from ...core.model_drafter import ModelDrafter
from ...errors import ModelError
from ..decoder import DecoderTarget, WhisperDecoderRunner, decoder_parts


class _DecoderOnly(nn.Module):
    """Holds a decoder and output projection in the layout WhisperDecoderRunner expects."""

    def __init__(self, decoder: nn.Module, proj_out: nn.Module):
        super().__init__()
        self.model = nn.Module()
        self.model.decoder = decoder
        self.proj_out = proj_out


def quantize_decoder(model: nn.Module) -> nn.Module:
    """The model's decoder with int8 dynamically quantized copies of its linear layers and output projection
    (CPU only). A float32 model's embeddings and layer norms are shared, not copied: the token embedding
    alone is 106 MB in Whisper base."""
    decoder, proj_out = decoder_parts(model)
    if decoder.embed_tokens.weight.device.type != "cpu":
        raise ModelError("the quantized-self drafter needs the main model on the CPU (torch dynamic int8 "
                         "quantization is CPU-only); use --mode assistant or early-exit on a GPU")
    if decoder.embed_tokens.weight.dtype == torch.float32:
        shell_decoder = copy.copy(decoder)
        shell_decoder.__dict__["_modules"] = dict(decoder._modules)  # its own table of children
        shell_decoder.__dict__["_modules"]["layers"] = copy.deepcopy(decoder.layers)
    else:
        shell_decoder = copy.deepcopy(decoder).float()
    shell = _DecoderOnly(shell_decoder, copy.deepcopy(proj_out).float()).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch announces the move of this API to torchao
        return torch.ao.quantization.quantize_dynamic(shell, {nn.Linear}, dtype=torch.qint8, inplace=True)


class QuantizedSelfDrafter(ModelDrafter):
    name = "quantized-self"

    def __init__(self, main_model: nn.Module, confidence_threshold: float = 0.0):
        super().__init__(confidence_threshold)
        self.runner = WhisperDecoderRunner(quantize_decoder(main_model))

    def start(self, context) -> None:
        super().start(context)
        encoder_output = context.encoder_output.float()
        cache = self.runner.new_cache(encoder_output, cross_states=_float_states(context.main_cross_states),
                                      max_positions=context.max_positions)
        self.target = DecoderTarget(self.runner, cache)


def _float_states(states):
    if states is None:
        return None
    keys, values = states
    return [k.float() for k in keys], [v.float() for v in values]
