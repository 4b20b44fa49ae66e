"""Weights in the layouts decoder_kernels.c reads: [ceil(n / 64)][k][64] tiles of one storage format.

Storage formats: float32, float16, bfloat16 and int8 (symmetric, one float32 scale per output column). A
float32 matrix whose every value is a float16 (Whisper checkpoints shipped as float16 are) is stored as
float16: the kernels widen it back exactly, so the arithmetic is float32's at half the memory traffic.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import torch

from . import Linear

TILE = 64
FORMATS = {"float32": 0, "float16": 1, "bfloat16": 2, "int8": 3}
STORAGE = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16, 3: torch.int8}


def lossless_float16(weight: torch.Tensor) -> bool:
    """Whether every value of `weight` is exactly a float16 value."""
    half = weight.to(torch.float16)
    return bool(torch.isfinite(half).all()) and torch.equal(half.to(weight.dtype), weight)


def quantize_int8(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(int8 values [n, k], float32 scale [n]): weight[i] ~ values[i] * scale[i], scale = max |weight[i]| / 127."""
    weight = weight.float()
    scale = weight.abs().amax(dim=1) / 127.0
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    values = torch.round(weight / scale[:, None]).clamp_(-127, 127).to(torch.int8)
    return values, scale


@dataclass
class PackedLinear:
    """One linear layer packed for the kernels; `struct` points into the tensors this object keeps alive."""

    format: str
    n: int
    k: int
    packed: torch.Tensor
    scale: torch.Tensor | None
    bias: torch.Tensor | None
    struct: Linear

    def dequantized(self) -> torch.Tensor:
        """The weight [n, k] as the kernels see it, in float32."""
        tiles = self.packed.float().reshape(-1, self.k, TILE).permute(0, 2, 1).reshape(-1, self.k)[: self.n]
        return tiles * self.scale[:, None] if self.scale is not None else tiles


def pack_linear(weight: torch.Tensor, bias: torch.Tensor | None, storage: str) -> PackedLinear:
    """Pack `weight` [n, k] (and `bias` [n]) in `storage` ("float32" keeps float32's values exactly)."""
    weight = weight.detach().float()
    n, k = weight.shape
    if storage == "float32" and lossless_float16(weight):
        storage = "float16"
    scale = None
    if storage == "int8":
        values, scale = quantize_int8(weight)
    else:
        values = weight.to(STORAGE[FORMATS[storage]])
    tiles = math.ceil(n / TILE)
    padded = torch.zeros(tiles * TILE, k, dtype=values.dtype)
    padded[:n] = values
    packed = padded.reshape(tiles, TILE, k).permute(0, 2, 1).contiguous()
    bias = bias.detach().float().contiguous() if bias is not None else None
    struct = Linear(FORMATS[storage], n, k, tiles, packed.data_ptr(), scale.data_ptr() if scale is not None else None,
                    bias.data_ptr() if bias is not None else None)
    return PackedLinear(storage, n, k, packed, scale, bias, struct)


def argmax_error(exact: PackedLinear, approx: PackedLinear) -> torch.Tensor:
    """e [n] with |x.W_v - x.W~_v| <= e[v] * ||x|| for every row v and any x, where W_v is what `exact` computes
    (float32 sums of k products) and W~_v what `approx` computes: the rows' difference (Cauchy-Schwarz) plus
    the float32 rounding of both sums (at most k+2 roundings each, relative 2^-24). Computed in float32 and
    rounded up generously (float32 norms of k terms are within k * 2^-24 of the truth)."""
    exact_rows, approx_rows = exact.dequantized(), approx.dequantized()
    difference = (exact_rows - approx_rows).norm(dim=1)
    rounding = (exact.k + 2) * 2.0 ** -24 / (1 - (exact.k + 2) * 2.0 ** -24)
    norms = exact_rows.norm(dim=1) + approx_rows.norm(dim=1)
    slack = 1 + 4 * exact.k * 2.0 ** -24 + 1e-4
    return ((difference + rounding * norms) * slack).contiguous()


def as_pointer(tensor: torch.Tensor | None) -> int | None:
    return tensor.data_ptr() if tensor is not None else None


def pointer_array(tensors: list[torch.Tensor]):
    return (ctypes.c_void_p * len(tensors))(*[tensor.data_ptr() for tensor in tensors])
