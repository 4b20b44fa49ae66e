"""Compute types: the precision of the main model's encoder and of its decoder, chosen separately.

`float32`, `bfloat16`, `float16` and `int8` set both; `ENCODER:DECODER` (e.g. `bfloat16:float32`) sets each;
`auto` picks the fastest type measured to keep float32's text on this hardware (README, Compute types).

Why the two halves differ: the encoder runs once per 30-s window, identically for plain and speculative
decoding, so its precision cannot break their equality; it only moves the text away from float32's as any
precision change does. The decoder runs once per step and once per verification; on the native kernels its
every precision computes each token the same way in a one-token step and in a verification pass (see
native_decoder.py), so speculative output equals plain output at every decoder type offered there. The
PyTorch path (no kernels, or a GPU) offers the model's own dtype only for the decoder.
"""

from __future__ import annotations

import copy
import warnings
import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ModelError

PRECISIONS = ("float32", "bfloat16", "float16", "int8")
COMPUTE_TYPE_HELP = ("float32, bfloat16, float16 (CUDA), int8, auto, or ENCODER:DECODER such as bfloat16:float32 "
                     "(default auto: bfloat16:float32 on CPUs with native bfloat16, float16 on CUDA, else float32)")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class ComputeType:
    encoder: str = "float32"
    decoder: str = "float32"

    @property
    def name(self) -> str:
        return self.encoder if self.encoder == self.decoder else f"{self.encoder}:{self.decoder}"

    def __str__(self) -> str:
        return self.name


def cpu_has_native_bfloat16() -> bool:
    """AVX512-BF16 or AMX: bfloat16 matrix products run at several times float32's speed."""
    try:
        with open("/proc/cpuinfo") as handle:
            flags = next((line for line in handle if line.startswith("flags")), "")
    except OSError:
        return False
    return any(flag in flags.split() for flag in ("avx512_bf16", "amx_bf16"))


def auto_compute_type(device: str) -> ComputeType:
    if str(device).startswith("cuda"):
        return ComputeType("float16", "float16")
    if cpu_has_native_bfloat16():
        return ComputeType("bfloat16", "float32")
    return ComputeType("float32", "float32")


def parse_compute_type(text: str | ComputeType | None, device: str = "cpu") -> ComputeType:
    """A ComputeType from its name ("auto" or None: the default for `device`), checked against the device."""
    if isinstance(text, ComputeType):
        compute = text
    elif text is None or text == "auto":
        return auto_compute_type(device)
    else:
        parts = str(text).strip().lower().split(":")
        if len(parts) > 2 or any(part not in PRECISIONS for part in parts):
            raise ModelError(f"unknown compute type '{text}': use {COMPUTE_TYPE_HELP}")
        compute = ComputeType(parts[0], parts[-1])
    on_cuda = str(device).startswith("cuda")
    for precision in (compute.encoder, compute.decoder):
        if precision == "float16" and not on_cuda:
            raise ModelError(f"compute type {compute}: float16 needs a CUDA GPU; on a CPU use bfloat16 or float32")
        if precision == "int8" and on_cuda:
            raise ModelError(f"compute type {compute}: int8 is CPU-only here; on a GPU use float16 or bfloat16")
    return compute


def model_dtype(compute: ComputeType, device: str) -> torch.dtype:
    """The dtype to load the model in: the decoder's on a GPU (its PyTorch path runs in the model's dtype),
    float32 on a CPU (reduced precisions are copies made from it)."""
    if str(device).startswith("cuda"):
        return DTYPES.get(compute.decoder, torch.float16)
    return torch.float32


_ENCODER_COPIES: dict[int, tuple[weakref.ref, dict]] = {}


def _encoder_copy(encoder: nn.Module, precision: str) -> nn.Module:
    """The encoder in `precision`, one copy per (encoder, precision) in the process (several transcribers on
    the same model share it; the model itself is left as it was)."""
    key = id(encoder)
    entry = _ENCODER_COPIES.get(key)
    if entry is None or entry[0]() is not encoder:
        entry = _ENCODER_COPIES[key] = (weakref.ref(encoder, lambda _: _ENCODER_COPIES.pop(key, None)), {})
    copies = entry[1]
    if precision not in copies:
        if precision == "int8":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch announces the move of this API to torchao
                copies[precision] = torch.ao.quantization.quantize_dynamic(
                    copy.deepcopy(encoder).float().eval(), {nn.Linear}, dtype=torch.qint8)
        else:
            copies[precision] = copy.deepcopy(encoder).to(DTYPES[precision]).eval()
    return copies[precision]


class EncoderRunner:
    """The main model's encoder in the compute type's encoder precision: features in, float32 states out.

    float32 runs the model's own encoder (transformers' arithmetic, bit for bit); bfloat16 and float16 run a
    copy through `fused_forward` (one product for q, k and v); int8 a dynamically quantized copy."""

    def __init__(self, encoder: nn.Module, precision: str):
        self.precision = precision
        own = next(encoder.parameters()).dtype
        if precision == "int8" or DTYPES.get(precision) != own:
            encoder = _encoder_copy(encoder, precision)
        self.encoder = encoder
        self.input_dtype = torch.float32 if precision == "int8" else DTYPES[precision]
        self._fused = _fused_projections(encoder) if precision in ("bfloat16", "float16") else None

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        features = features.to(self.input_dtype)
        if self._fused is not None:
            output = fused_forward(self.encoder, self._fused, features)
        else:
            output = self.encoder(features).last_hidden_state
        return output if output.dtype == torch.float32 else output.float()


def _fused_projections(encoder: nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per layer, the q, k and v projections as one weight [3 * width, width] and bias (k has none)."""
    fused = []
    for layer in encoder.layers:
        attention = layer.self_attn
        bias = torch.cat([attention.q_proj.bias, torch.zeros_like(attention.q_proj.bias), attention.v_proj.bias])
        fused.append((torch.cat([attention.q_proj.weight, attention.k_proj.weight, attention.v_proj.weight]).detach(),
                      bias.detach()))
    return fused


def fused_forward(encoder: nn.Module, fused: list, features: torch.Tensor) -> torch.Tensor:
    """Whisper's encoder forward with q, k and v computed by one matrix product per layer (queries scaled after
    it, as transformers does) and, in bfloat16 on a CPU with AVX512-BF16, attention by the native flash kernel
    (bfloat16 products, float32 softmax and sums); the same operations otherwise."""
    from ..native import bfloat16_attention, kernels

    hidden = F.gelu(encoder.conv1(features))
    hidden = F.gelu(encoder.conv2(hidden)).permute(0, 2, 1).contiguous()  # else every later op copies it
    hidden = hidden + encoder.embed_positions.weight[: hidden.shape[1]]
    batch, length, width = hidden.shape
    native = (hidden.dtype == torch.bfloat16 and hidden.device.type == "cpu" and bfloat16_attention()
              and encoder.layers[0].self_attn.head_dim % 32 == 0)
    for layer, (weight, bias) in zip(encoder.layers, fused):
        attention = layer.self_attn
        projected = F.linear(layer.self_attn_layer_norm(hidden), weight, bias)
        if native:
            attended = torch.empty(batch, length, width, dtype=hidden.dtype)
            scratch = torch.empty(torch.get_num_threads() * 2 * (-(-length // 32) * 32) * attention.head_dim,
                                  dtype=hidden.dtype)
            for row in range(batch):
                kernels().encoder_attention_bf16(projected[row].contiguous().data_ptr(), length, attention.num_heads,
                                                 attention.head_dim, float(attention.scaling),
                                                 attended[row].data_ptr(), scratch.data_ptr(),
                                                 torch.get_num_threads())
        else:
            query, key, value = projected.view(batch, length, 3, attention.num_heads, attention.head_dim).permute(
                2, 0, 3, 1, 4)
            attended = F.scaled_dot_product_attention(query * attention.scaling, key, value, scale=1.0)
            attended = attended.transpose(1, 2).reshape(batch, length, width)
        hidden = hidden + attention.out_proj(attended)
        hidden = hidden + layer.fc2(_linear_gelu(layer.fc1, layer.final_layer_norm(hidden)))
    return encoder.layer_norm(hidden)


def _linear_gelu(linear: nn.Linear, inputs: torch.Tensor) -> torch.Tensor:
    """GELU(linear(inputs)); on a CPU as one product with the GELU applied to its output in place (oneDNN's
    fused activation: the same bits, without a second pass over a [frames, 4 * width] tensor)."""
    if inputs.device.type != "cpu" or not hasattr(torch, "_addmm_activation"):
        return F.gelu(linear(inputs))
    flat = inputs.reshape(-1, inputs.shape[-1])
    output = torch._addmm_activation(linear.bias, flat, linear.weight.t(), use_gelu=True)
    return output.view(*inputs.shape[:-1], -1)
