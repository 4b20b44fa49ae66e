"""A safetensors file written one tensor at a time: the header is laid out from the shapes alone, then each
tensor is made, written and let go, so writing a model never holds more than its largest tensor.

The format is safetensors' own (an 8-byte little-endian header length, a JSON header of dtype, shape and byte
range per tensor, padded to 8 bytes, then the data), so `safetensors.safe_open` and `load_file` read it.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

CODES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int8: "I8", torch.uint8: "U8",
         torch.int16: "I16", torch.int32: "I32", torch.int64: "I64"}


@dataclass(frozen=True)
class Planned:
    """A tensor to be written: its dtype and shape now, its values from `make()` when its turn comes."""

    dtype: torch.dtype
    shape: tuple[int, ...]
    make: Callable[[], torch.Tensor]

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * torch.empty(0, dtype=self.dtype).element_size()


def write_streamed(path: Path, tensors: Mapping[str, Planned], metadata: dict[str, str] | None = None) -> None:
    """Write `tensors` to `path` in name order; a made tensor whose dtype or shape is not the planned one raises
    ValueError (the header already promised them)."""
    header: dict = {"__metadata__": metadata} if metadata else {}
    offset = 0
    names = sorted(tensors)
    for name in names:
        planned = tensors[name]
        header[name] = {"dtype": CODES[planned.dtype], "shape": list(planned.shape),
                        "data_offsets": [offset, offset + planned.nbytes]}
        offset += planned.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)))
        handle.write(encoded)
        for name in names:
            planned = tensors[name]
            tensor = planned.make().detach().contiguous()
            if tensor.dtype != planned.dtype or tuple(tensor.shape) != planned.shape:
                raise ValueError(f"{name}: made {tensor.dtype} {list(tensor.shape)}, planned {planned.dtype} "
                                 f"{list(planned.shape)}")
            handle.write(tensor.cpu().reshape(-1).view(torch.uint8).numpy())
            del tensor
