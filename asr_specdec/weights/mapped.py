"""Memory a load no longer needs, given back: the pages of weights memory-mapped from a file (safetensors' tensors
are) once they were read, and the heap's free space once packing is done.

A mapped tensor costs resident memory only for the pages that were read, and keeps them until the mapping goes.
Packing reads every weight once, so without this a first load would end holding the whole float32 model beside
its packs. Let go, a page is read back from the file if the tensor is used again. Only pages of a file mapping
are ever let go (in anonymous memory that would erase the values), and only whole pages inside the tensor.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial

import torch

MADV_DONTNEED = 4


@lru_cache(maxsize=1)
def _madvise():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None
    function = libc.madvise
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def _file_mappings() -> list[tuple[int, int]]:
    """(start, end) of this process's mappings of regular files, private (copy-on-write) or read-only; a file since
    unlinked only where private (the packs a first load spools to an unlinked file: a page dropped is read back
    from it, since the mapping keeps it open)."""
    spans = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) < 6 or not fields[5].startswith("/"):
                    continue
                private = fields[1][3] == "p"
                if not private and ("w" in fields[1] or fields[5].rstrip().endswith("(deleted)")):
                    continue  # shared and writable (changes may not be written back), or shared and unlinked
                start, end = (int(value, 16) for value in fields[0].split("-"))
                spans.append((start, end))
    except OSError:
        return []
    return spans


def _page_spans(tensors, bridge: bool = False) -> list[tuple[int, int]]:
    """(begin, end) of the whole pages of each CPU tensor that lie in a file mapping, overlapping spans merged, and
    with `bridge` also spans one page apart in one mapping (the page two neighbouring tensors share)."""
    ranges = []
    for tensor in tensors:
        if tensor is None or tensor.device.type != "cpu" or tensor.numel() == 0 or not tensor.is_contiguous():
            continue
        start = tensor.data_ptr()
        end = start + tensor.numel() * tensor.element_size()
        begin, stop = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE, end // mmap.PAGESIZE * mmap.PAGESIZE
        if stop > begin:
            ranges.append((begin, stop))
    if not ranges:
        return []
    mappings, merged, merged_in = _file_mappings(), [], None
    for begin, stop in sorted(ranges):
        mapping = next(((start, end) for start, end in mappings if start <= begin and stop <= end), None)
        if mapping is None:
            continue
        if merged and mapping == merged_in and begin <= merged[-1][1] + (mmap.PAGESIZE if bridge else 0):
            merged[-1] = (merged[-1][0], max(stop, merged[-1][1]))
        else:
            merged.append((begin, stop))
            merged_in = mapping
    return merged


def let_go(*tensors: torch.Tensor | None) -> int:
    """Drop from the resident set the whole pages of each CPU tensor that lie in a file mapping; returns the bytes
    let go. Tensors in ordinary memory are left as they are."""
    madvise = _madvise()
    if madvise is None:
        return 0
    return sum(stop - begin for begin, stop in _page_spans(tensors) if madvise(begin, stop - begin, MADV_DONTNEED) == 0)


@dataclass(frozen=True)
class FilePages:
    """The pages of some tensors that lie in file mappings, found once: each of `drops` lets one span of them go
    (let_go's work without its search, and without running Python: a call that ends with them does not grow its
    traced path)."""

    drops: tuple[Callable, ...]
    bytes: int


def file_pages(*tensors: torch.Tensor | None) -> FilePages:
    madvise = _madvise()
    spans = _page_spans(tensors, bridge=True) if madvise is not None else []
    return FilePages(tuple(partial(madvise, begin, stop - begin, MADV_DONTNEED) for begin, stop in spans),
                     sum(stop - begin for begin, stop in spans))


class _HeapInfo(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


@dataclass(frozen=True)
class Heap:
    """glibc's C heap, its functions looked up once: `info().fordblks` is the bytes it holds free (mallinfo2, about
    a millisecond), `trim(0)` gives them back to the system (malloc_trim)."""

    info: Callable
    trim: Callable


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def libc_heap() -> Heap | None:
    """This process's C heap (None without glibc, or one too old for mallinfo2): looked up when a model loads, so
    that a call only calls it."""
    info, trim = (getattr(_libc(), name, None) for name in ("mallinfo2", "malloc_trim"))
    if info is None or trim is None:
        return None
    info.restype = _HeapInfo
    return Heap(info, trim)


def trim_heap() -> None:
    """Return the C heap's free memory to the system (glibc's malloc_trim): packing frees many transient tensors
    the allocator would otherwise keep, counted in the resident set. Without glibc, nothing."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)
