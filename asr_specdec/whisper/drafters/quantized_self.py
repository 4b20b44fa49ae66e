"""The main model's own decoder with int8 weights, as drafter.

No second model to download, same tokenizer, and it shares the main encoder output and the main model's
cross-attention keys/values (in bfloat16, half the bytes a step reads), so a draft step costs only the int8
decoder layers and projection. On the native kernels the int8 weights are packed copies of the main ones
(one scale per output column; embeddings and norms shared), multiplied with int8-quantized activations where
the CPU has AVX512-VNNI (64 products per instruction; a drafter needs no exactness), else in float32;
without the kernels, torch's dynamic int8 quantization of a copy of the decoder.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn

from ...core.model_drafter import ModelDrafter
from ...errors import ModelError
from ..runtime.decoder import DecoderTarget, WhisperDecoderRunner, decoder_parts, drafting_formats


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
        shell_decoder.__dict__["_modules"]["layers"] = copy.deepcopy(decoder.layers).float()  # (16-bit linears)
    else:
        shell_decoder = copy.deepcopy(decoder).float()
    shell = _DecoderOnly(shell_decoder, copy.deepcopy(proj_out).float()).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch announces the move of this API to torchao
        return torch.ao.quantization.quantize_dynamic(shell, {nn.Linear}, dtype=torch.qint8, inplace=True)


MODE = "quantized-self"


def build(context) -> QuantizedSelfDrafter:
    return QuantizedSelfDrafter(context.main, context.options.confidence_threshold)


class QuantizedSelfDrafter(ModelDrafter):
    name = "quantized-self"

    def __init__(self, main_model: nn.Module, confidence_threshold: float = 0.0, weights: str | None = None):
        super().__init__(confidence_threshold)
        formats = drafting_formats(main_model)
        if formats:
            self.runner = WhisperDecoderRunner(main_model, **{**formats, "weights": weights or formats["weights"]})
        else:
            self.runner = WhisperDecoderRunner(quantize_decoder(main_model))

    def start(self, context) -> None:
        super().start(context)
        cache = self.runner.new_cache(context.encoder_output, cross_states=context.main_cross_states,
                                      max_positions=context.max_positions)
        self.target = DecoderTarget(self.runner, cache)
