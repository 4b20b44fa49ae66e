"""Weights in the layouts decoder_kernels.c reads: [ceil(n / 64)][k][64] tiles of one storage format.

Storage formats: float32, float16, bfloat16 and int8 (symmetric, one float32 scale per output column);
int8-vnni, the same int8 values + 128 as [ceil(n / 64)][k / 4][64][4] for products with int8 activations, and
int4-vnni, 4-bit values with a scale per column and group of inputs (draft_kernels.c; the drafter's
vocabulary screen): drafters and the int8 encoder only, since those products are not float32's; and
int8-vnni-float, an int8-vnni pack read with float32 activations (`float_activations`): an int8 pack's bits. A
float32 matrix whose every value is a float16 (Whisper checkpoints shipped as float16 are) is stored as
float16: the kernels widen it back exactly, so the arithmetic is float32's at half the memory traffic.
"""

from __future__ import annotations

import math
import mmap
import re
import weakref
from dataclasses import dataclass
from pathlib import Path

import torch

from ..weights.mapped import let_go, trim_heap
from . import Linear

TILE = 64
# a pack file under a key of the one-part form used before 2026-12-06 (24 hex digits, no version)
OLD_KEY_FORM = re.compile(r"[0-9a-f]{24}-")
SPOOL_MIN_BYTES = 1 << 16  # smaller tensors stay in the heap: a page-aligned mapping each would cost more
TRIM_BYTES = 64 << 20
FORMATS = {"float32": 0, "float16": 1, "bfloat16": 2, "int8": 3, "int8-vnni": 4, "int4-vnni": 5, "int8-vnni-float": 6}
STORAGE = {0: torch.float32, 1: torch.float16, 2: torch.bfloat16, 3: torch.int8, 4: torch.uint8, 5: torch.uint8,
           6: torch.uint8}
PART_TILES = 64  # tiles dequantized at once for a bound over a whole matrix (all of large-v3's vocabulary in
# float32, twice, was ~530 MB of its first load)
INT4_GROUP = 128  # inputs per int4 scale (the whole row when it does not divide the input width)


def lossless_float16(weight: torch.Tensor) -> bool:
    """Whether every value of `weight` is exactly a float16 value (an overflow to inf, or a NaN, compares
    unequal)."""
    return torch.equal(weight.to(torch.float16).to(weight.dtype), weight)


def int4_group(k: int) -> int:
    return INT4_GROUP if k % INT4_GROUP == 0 else k


def quantize_int4(weight: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(int4 values in -7..7 as int8 [n, k], float32 scales [k / group, n]): weight[i, j] ~ values[i, j] *
    scale[j // group, i], each scale the max |weight| of its group / 7."""
    n, k = weight.shape
    grouped = weight.float().reshape(n, k // group, group)
    scale = grouped.abs().amax(dim=2) / 7.0
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    values = torch.round(grouped / scale[..., None]).clamp_(-7, 7).to(torch.int8).reshape(n, k)
    return values, scale.t().contiguous()


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
    group: int = 0  # int4-vnni: inputs per scale

    def dequantized(self, first_tile: int = 0, tiles: int | None = None) -> torch.Tensor:
        """The weight [n, k] as the kernels see it, in float32; or the rows of `tiles` tiles from `first_tile` (64
        rows a tile, the last one short), so that a bound over a large matrix needs a float32 copy of a part only."""
        last = self.packed.shape[0] if tiles is None else min(first_tile + tiles, self.packed.shape[0])
        packed, start = self.packed[first_tile:last], first_tile * TILE
        rows = min(last * TILE, self.n) - start
        if self.format == "int4-vnni":
            nibbles = torch.stack([packed & 0x0F, packed >> 4], dim=3).to(torch.int16) - 8
            values = nibbles.permute(0, 2, 1, 3, 4).reshape(-1, self.k)[:rows].float()  # [tiles, 64, k/8, 2, 4]
            return values * self.scale[:, start: start + rows].repeat_interleave(self.group, dim=0).t()
        if self.format in ("int8-vnni", "int8-vnni-float"):
            values = (packed.float() - 128).permute(0, 2, 1, 3).reshape(-1, self.k)[:rows]
        else:
            values = packed.float().reshape(-1, self.k, TILE).permute(0, 2, 1).reshape(-1, self.k)[:rows]
        return values * self.scale[start: start + rows, None] if self.scale is not None else values

    def row_norms(self) -> torch.Tensor:
        """||W_v|| of every row v of `dequantized()`, computed PART_TILES tiles at a time."""
        return torch.cat([self.dequantized(first, PART_TILES).norm(dim=1)
                          for first in range(0, self.packed.shape[0], PART_TILES)])


def pack_linear(weight: torch.Tensor, bias: torch.Tensor | None, storage: str) -> PackedLinear:
    """Pack `weight` [n, k] (and `bias` [n]) in `storage` ("float32" keeps float32's values exactly)."""
    weight = weight.detach().float()
    n, k = weight.shape
    if storage == "float32" and lossless_float16(weight):
        storage = "float16"
    scale, group = None, None
    if storage == "int4-vnni":
        if k % 8:
            raise ValueError(f"int4-vnni needs an input width that is a multiple of 8, not {k}")
        group = int4_group(k)
        values, scale = quantize_int4(weight, group)
    elif storage in ("int8", "int8-vnni"):
        values, scale = quantize_int8(weight)
    else:
        values = weight.to(STORAGE[FORMATS[storage]])
    tiles = math.ceil(n / TILE)
    padded = torch.zeros(tiles * TILE, k, dtype=values.dtype)
    padded[:n] = values
    if storage == "int4-vnni":
        unsigned = (padded.to(torch.int16) + 8).to(torch.uint8).reshape(tiles, TILE, k // 8, 2, 4)
        packed = (unsigned[:, :, :, 0] | (unsigned[:, :, :, 1] << 4)).permute(0, 2, 1, 3).contiguous()
    elif storage == "int8-vnni":
        if k % 4:
            raise ValueError(f"int8-vnni needs an input width that is a multiple of 4, not {k}")
        unsigned = (padded.to(torch.int16) + 128).to(torch.uint8)
        packed = unsigned.reshape(tiles, TILE, k // 4, 4).permute(0, 2, 1, 3).contiguous()
    else:
        packed = padded.reshape(tiles, TILE, k).permute(0, 2, 1).contiguous()
    bias = bias.detach().float().contiguous() if bias is not None else None
    return packed_linear(n, packed, scale, bias, group or 0)


def float_activations(pack: PackedLinear) -> PackedLinear:
    """An int8-vnni `pack` read with float32 activations: the kernels compute, bit for bit, what an int8 pack of the
    same values (quantize_int8 makes both from one weight) computes, so one copy serves as both (a vocabulary's
    screen and its exact scores; decoder_kernels.c, vnni_tile_float)."""
    if pack.format != "int8-vnni":
        raise ValueError(f"float activations read an int8-vnni pack, not {pack.format}")
    struct = Linear(FORMATS["int8-vnni-float"], pack.n, pack.k, pack.packed.shape[0], 0, pack.packed.data_ptr(),
                    pack.scale.data_ptr(), pack.bias.data_ptr() if pack.bias is not None else None)
    return PackedLinear("int8-vnni-float", pack.n, pack.k, pack.packed, pack.scale, pack.bias, struct)


def packed_linear(n: int, packed: torch.Tensor, scale: torch.Tensor | None, bias: torch.Tensor | None,
                  group: int = 0) -> PackedLinear:
    """A PackedLinear around tensors already in the packed layout (`group` > 0: int4-vnni)."""
    storage = "int4-vnni" if group else next(name for name, code in FORMATS.items() if STORAGE[code] == packed.dtype)
    tiles, k = packed.shape[0], packed.shape[1] * {"int8-vnni": 4, "int4-vnni": 8}.get(storage, 1)
    struct = Linear(FORMATS[storage], n, k, tiles, group, packed.data_ptr(),
                    scale.data_ptr() if scale is not None else None, bias.data_ptr() if bias is not None else None)
    return PackedLinear(storage, n, k, packed, scale, bias, struct, group)


class PackStore:
    """The packed weights of one model in one storage format, kept on disk between runs, so that a start-up
    reads them instead of converting the model again. `key` names the model's exact weights (None: no disk).
    Tensors are read from the file when first asked for, so a user of a few of them reads only those."""

    def __init__(self, key: str | None, storage: str):
        self.path = None
        self.tensors: dict[str, torch.Tensor] = {}
        self.names: set[str] = set()
        self.added = False
        self._file = None
        self._spool = None  # this run's packs, once made (_spooled)
        self._spool_maps: list = []
        self._freed = 0  # bytes of spooled tensors' heap copies freed since the heap was last trimmed
        if key is not None:
            from ..weights.cache import cache_root

            self.path = cache_root() / "packed" / f"{key}-{storage}.safetensors"
            if self.path.is_file():
                from safetensors import safe_open

                try:
                    self._file = safe_open(str(self.path), framework="pt")
                    self.names = set(self._file.keys())
                except Exception:  # a damaged file is rebuilt
                    self._file, self.names = None, set()

    def _get(self, name: str) -> torch.Tensor | None:
        if name not in self.tensors and name in self.names:
            self.tensors[name] = self._file.get_tensor(name)
        return self.tensors.get(name)

    def _spooled(self, tensor: torch.Tensor | None) -> torch.Tensor | None:
        """`tensor` moved out of the heap: written to this run's spool (an unlinked file beside the store's) and
        mapped back, so that a pack made now costs what one read from the store costs, pages the kernel may drop
        and read again, rather than memory the process holds for good (a first load of large-v3 held its packs
        twice over: made in the heap, then read back from the file). Where nothing can be written, the tensor
        stays as it is."""
        if tensor is None or self.path is None or tensor.nbytes < SPOOL_MIN_BYTES:
            return tensor
        import os
        import tempfile

        import numpy as np

        try:
            if self._spool is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._spool = tempfile.TemporaryFile(dir=self.path.parent, prefix=".spool-")
                # closed once the store is saved, or with the store: its mappings keep their own descriptors
                self._close_spool = weakref.finalize(self, self._spool.close)
            raw = tensor.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
            grain = mmap.ALLOCATIONGRANULARITY  # a mapping's offset must be a multiple of it
            offset = -(-os.fstat(self._spool.fileno()).st_size // grain) * grain
            os.pwrite(self._spool.fileno(), memoryview(raw), offset)
            mapped = mmap.mmap(self._spool.fileno(), raw.size, access=mmap.ACCESS_COPY, offset=offset)
        except OSError:
            return tensor
        self._spool_maps.append(mapped)
        return torch.from_numpy(np.frombuffer(mapped, dtype=np.uint8)).view(tensor.dtype).view(tensor.shape)

    def _handed_back(self, freed: int) -> None:
        """Heap copies of spooled tensors are free: hand them back to the system every TRIM_BYTES or so, or they
        stay resident beside the mapped ones (trimming after every pack cost base's first load ~8%)."""
        self._freed += freed
        if self._freed >= TRIM_BYTES:
            trim_heap()
            self._freed = 0

    def linear(self, name: str, build) -> PackedLinear:
        """The pack stored as `name`, or `build()` (a PackedLinear) stored under it."""
        if f"{name}.packed" in self.tensors or f"{name}.packed" in self.names:
            get = self._get
            group = get(f"{name}.group")
            return packed_linear(int(get(f"{name}.n")), get(f"{name}.packed"), get(f"{name}.scale"),
                                 get(f"{name}.bias"), int(group) if group is not None else 0)
        built = build()
        packed = packed_linear(built.n, self._spooled(built.packed), self._spooled(built.scale),
                               self._spooled(built.bias), built.group)
        if packed.packed is not built.packed:
            freed = built.packed.nbytes
            del built
            self._handed_back(freed)
        self.tensors.update({f"{name}.packed": packed.packed, f"{name}.n": torch.tensor(packed.n)})
        if packed.group:
            self.tensors[f"{name}.group"] = torch.tensor(packed.group)
        for part in ("scale", "bias"):
            if getattr(packed, part) is not None:
                self.tensors[f"{name}.{part}"] = getattr(packed, part)
        self.added = True
        return packed

    def tensor(self, name: str, build) -> torch.Tensor:
        if self._get(name) is None:
            built = build()
            self.tensors[name] = self._spooled(built)
            if self.tensors[name] is not built:
                freed = built.nbytes
                del built
                self._handed_back(freed)
            self.added = True
        return self.tensors[name]

    def drop(self, prefix: str) -> None:
        """Forget the stored tensors whose names start with `prefix` (packs this format no longer keeps here); the
        next save writes the file without them."""
        stale = {name for name in self.names | set(self.tensors) if name.startswith(prefix)}
        if stale:
            for name in self.names - stale:
                self._get(name)  # read before the file is replaced
            self.names -= stale
            for name in stale:
                self.tensors.pop(name, None)
            self.added = True

    def _remove_earlier_versions(self) -> None:
        """Remove the stored packs of earlier versions of these weights: a key "WHICH-VERSION" (lean_model.py) names
        the weights (folder and dtype) and their version (the file's size and time), and once the file changed
        (converted again, or replaced) nothing would ever read the old version's packs again. Packs under a key of
        the older one-part form, which nothing can trace to its weights, go with them."""
        which, _, version = self.path.name.partition("-")
        version = version.partition("-")[0]
        if not version:
            return  # a key without a version (tests' own): nothing to compare with
        for stored in self.path.parent.glob("*.safetensors"):
            name = stored.name
            earlier = name.startswith(f"{which}-") and not name.startswith(f"{which}-{version}-")
            if earlier or OLD_KEY_FORM.match(name):
                stored.unlink(missing_ok=True)  # a process still reading it keeps its mapping

    def save(self) -> None:
        """Write the store if anything was added or dropped (atomically: a reader sees the old file or the new
        one); what the file held, nobody asked for and nobody dropped is kept. A store left with nothing has no
        file."""
        if self.path is None or not self.added:
            return
        import os
        import tempfile

        from ..weights.streamed_safetensors import Planned, write_streamed

        if not self.names and not self.tensors:  # all of it dropped (an int8 decoder's vocabulary, since 2026-12-07)
            self.path.unlink(missing_ok=True)
            self.added = False
            return
        read_back = [name for name in self.names if name not in self.tensors]  # only to be written again
        for name in self.names:
            self._get(name)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, staged = tempfile.mkstemp(dir=self.path.parent, prefix=".staging-")
        os.close(handle)
        try:
            # tensor by tensor: a serialised copy of every pack at once would double the first load's peak
            write_streamed(Path(staged), {name: Planned(tensor.dtype, tuple(tensor.shape), lambda tensor=tensor: tensor)
                                          for name, tensor in self.tensors.items()}, {"format": "pt"})
            os.replace(staged, self.path)
            self._remove_earlier_versions()
        except OSError:
            Path(staged).unlink(missing_ok=True)  # a read-only cache only costs the next start-up its time
        self.names |= set(self.tensors)
        self.added = False
        if hasattr(mmap, "MADV_DONTNEED"):  # writing the store read every page: let the kernel take them back
            for mapped in self._spool_maps:  # (a private mapping never written: a page read again is the file's)
                mapped.madvise(mmap.MADV_DONTNEED)
        # and those of the tensors read from the old file only to be copied (a first load's second save of one
        # store held a large-v3 decoder's 734 MB of layer packs so, resident for nothing)
        let_go(*(self.tensors[name] for name in read_back))
        if self._spool is not None:  # what was spooled is in the store now; a later pack opens a new spool
            self._close_spool()
            self._spool = None


def argmax_error(exact: PackedLinear, approx: PackedLinear) -> torch.Tensor:
    """e [n] with |x.W_v - x.W~_v| <= e[v] * ||x|| for every row v and any x, where W_v is what `exact` computes
    (float32 sums of k products) and W~_v what `approx` computes: the rows' difference (Cauchy-Schwarz) plus
    the float32 rounding of both sums (at most k+2 roundings each, relative 2^-24). Computed in float32 and
    rounded up generously (float32 norms of k terms are within k * 2^-24 of the truth)."""
    differences, norms = [], []
    for first in range(0, exact.packed.shape[0], PART_TILES):  # each part dequantized once, both matrices' rows
        exact_rows, approx_rows = exact.dequantized(first, PART_TILES), approx.dequantized(first, PART_TILES)
        differences.append((exact_rows - approx_rows).norm(dim=1))
        norms.append(exact_rows.norm(dim=1) + approx_rows.norm(dim=1))
    difference, norms = torch.cat(differences), torch.cat(norms)
    rounding = (exact.k + 2) * 2.0 ** -24 / (1 - (exact.k + 2) * 2.0 ** -24)
    slack = 1 + 4 * exact.k * 2.0 ** -24 + 1e-4
    return ((difference + rounding * norms) * slack).contiguous()
