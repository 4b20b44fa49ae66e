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

from dataclasses import dataclass

import torch

from ...errors import ModelError

PRECISIONS = ("float32", "bfloat16", "float16", "int8")
COMPUTE_TYPE_HELP = ("float32, bfloat16, float16 (CUDA), int8, auto, or ENCODER:DECODER such as int8:float32 "
                     "(default auto: bfloat16:float32 on the AVX-512 kernel build and other CPUs with native bfloat16, "
                     "int8:float32 on the AVX2 build, float32 on NEON, "
                     "int8 on the AVX-512 and AVX2 builds for models wider than base, float16 on CUDA, else float32)")
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


def auto_compute_type(device: str, width: int | None = None) -> ComputeType:
    """The fastest compute type measured to keep float32's WER on the shared clips, for this CPU's kernel build
    and a model `width` wide (d_model; None: as base) (native/backend.py decides; README, Compute types): up to
    base's width the decoder in float32, the encoder in bfloat16 where the CPU multiplies it natively, else in
    float32; wider models what was measured fastest at their width; float16 on CUDA."""
    if str(device).startswith("cuda"):
        return ComputeType("float16", "float16")
    from ...native import capabilities
    from ...native.backend import auto_compute

    return ComputeType(*auto_compute(capabilities().decoder, width))


def parse_compute_type(text: str | ComputeType | None, device: str = "cpu", width: int | None = None) -> ComputeType:
    """A ComputeType from its name ("auto" or None: the default for `device` and a model `width` wide), checked
    against the device."""
    if isinstance(text, ComputeType):
        compute = text
    elif text is None or text == "auto":
        return auto_compute_type(device, width)
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
