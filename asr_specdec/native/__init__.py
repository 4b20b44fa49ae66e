"""Native CPU kernels (decoder_kernels.c the decoder step, draft_kernels.c the drafter's cheaper products,
encoder_kernels.c the encoder's attention and int8 products; kernels.h what they share, written against the SIMD
layer simd.h): compiled for the build backend.py chooses (avx512, avx2 or neon) with the system C compiler on first
use, cached on disk by a hash of the source, the flags and the compiler, and loaded with ctypes.

`kernels()` returns the loaded library, or None when this machine cannot build or run it (no kernel build for this
CPU, no C compiler, ASR_SPECDEC_ISA=none); `unavailable_reason()` says why. What runs natively is one value,
`capabilities()`: every caller decides by it. Callers without kernels use their PyTorch path (`announce_fallback`
says so once).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from .backend import backend as _chosen_backend
from .backend import exact_int8_layers

HERE = Path(__file__).parent
SOURCES = tuple(HERE / name for name in ("decoder_kernels.c", "draft_kernels.c", "encoder_kernels.c"))
HEADERS = tuple(HERE / name for name in ("kernels.h", "claims.h", "int8_tiles.h", "simd.h", "simd_avx512.h",
                                         "simd_avx2.h", "simd_neon.h"))
BASE_FLAGS = ("-O3", "-std=gnu11", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno")
OPENMP = "-fopenmp"

_state: dict = {}


class Linear(ctypes.Structure):
    _fields_ = [("format", ctypes.c_int32), ("n", ctypes.c_int32), ("k", ctypes.c_int32),
                ("n_tiles", ctypes.c_int32), ("group", ctypes.c_int32), ("packed", ctypes.c_void_p),
                ("scale", ctypes.c_void_p), ("bias", ctypes.c_void_p)]


class Layer(ctypes.Structure):
    _fields_ = [("ln1_w", ctypes.c_void_p), ("ln1_b", ctypes.c_void_p), ("qkv", Linear), ("self_out", Linear),
                ("ln2_w", ctypes.c_void_p), ("ln2_b", ctypes.c_void_p), ("cross_q", Linear), ("cross_out", Linear),
                ("ln3_w", ctypes.c_void_p), ("ln3_b", ctypes.c_void_p), ("fc1", Linear), ("fc2", Linear)]


class Model(ctypes.Structure):
    _fields_ = [("d", ctypes.c_int32), ("heads", ctypes.c_int32), ("head_dim", ctypes.c_int32),
                ("ffn", ctypes.c_int32), ("n_layers", ctypes.c_int32), ("scaling", ctypes.c_float),
                ("eps", ctypes.c_float), ("embed", ctypes.c_void_p), ("positions", ctypes.c_void_p),
                ("ln_w", ctypes.c_void_p), ("ln_b", ctypes.c_void_p), ("layers", ctypes.POINTER(Layer))]


class Cache(ctypes.Structure):
    _fields_ = [("kv_format", ctypes.c_int32), ("cross_format", ctypes.c_int32), ("slots", ctypes.c_int32),
                ("enc_len", ctypes.c_int32), ("enc_pad", ctypes.c_int32), ("self_k", ctypes.POINTER(ctypes.c_void_p)),
                ("self_v", ctypes.POINTER(ctypes.c_void_p)), ("cross_k", ctypes.POINTER(ctypes.c_void_p)),
                ("cross_v", ctypes.POINTER(ctypes.c_void_p)), ("cross_k_scale", ctypes.POINTER(ctypes.c_void_p)),
                ("cross_v_scale", ctypes.POINTER(ctypes.c_void_p)),
                ("cross_rows", ctypes.c_void_p)]


def compiler() -> str | None:
    """The C compiler: $CC, else gcc, clang or cc."""
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang") or shutil.which("cc")


def compile_commands(compiler: str, flags: tuple[str, ...], output: Path) -> tuple[list[list[str]], list[str]]:
    """A command a source, each writing an object beside `output` (they run at once: a first run's build takes its
    longest source's time, not their sum; separately or in one command, gcc compiles each source on its own, so the
    code is the same), and the command that links them into `output`."""
    objects = [output.with_name(f"{source.stem}.o") for source in SOURCES]
    each = [[compiler, *(flag for flag in BASE_FLAGS if flag != "-shared"), *flags, "-c", str(source), "-o", str(obj)]
            for source, obj in zip(SOURCES, objects)]
    return each, [compiler, *BASE_FLAGS, *flags, *map(str, objects), "-o", str(output), "-lm"]


def _compile(commands: tuple[list[list[str]], list[str]]) -> None:
    each, link = commands
    running = [subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for command in each]
    failed = [error for process in running for error in [process.communicate(timeout=300)[1]] if process.returncode]
    if not failed:
        linked = subprocess.run(link, capture_output=True, text=True, timeout=300)
        failed = [linked.stderr] if linked.returncode else []
    if failed:
        raise RuntimeError(f"compiling the native kernels failed: {failed[0].strip().splitlines()[-1:]}")


def _library_path(compiler: str, isa: str, flags: tuple[str, ...]) -> Path:
    from ..weights.cache import cache_root

    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    code = b"".join(path.read_bytes() for path in (*SOURCES, *HEADERS))
    digest = hashlib.sha256(code + " ".join((*BASE_FLAGS, *flags)).encode() + version.encode()).hexdigest()[:16]
    return cache_root() / "native" / f"kernels-{isa}-{digest}.so"


def build(compiler: str, isa: str, flags: tuple[str, ...]) -> tuple[Path, float]:
    """The compiled library for `isa` (compiling it now if the cache has none) and the seconds compiling took.
    `flags` are the target flags, plus -fopenmp to thread the kernels (without OpenMP, build without it: the
    kernels then run on the calling thread, with the same results)."""
    target = _library_path(compiler, isa, flags)
    if target.is_file():
        return target, 0.0
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as scratch:
        staged = Path(scratch) / target.name
        _compile(compile_commands(compiler, flags, staged))
        os.replace(staged, target)  # atomic: another process sees no library or a whole one
    return target, time.perf_counter() - started


def _declare(library: ctypes.CDLL) -> ctypes.CDLL:
    pointer, i32 = ctypes.c_void_p, ctypes.c_int
    library.scratch_floats.argtypes = [ctypes.POINTER(Model), ctypes.POINTER(Cache), i32, i32]
    library.scratch_floats.restype = ctypes.c_size_t
    library.decoder_pass.argtypes = [ctypes.POINTER(Model), ctypes.POINTER(Cache), i32, pointer, pointer, pointer,
                                     pointer, pointer, pointer, pointer, i32]
    library.decoder_pass.restype = i32
    library.linear_forward.argtypes = [ctypes.POINTER(Linear), i32, pointer, i32, pointer, i32, i32]
    library.linear_forward.restype = None
    library.linear_tiles.argtypes = [ctypes.POINTER(Linear), i32, pointer, i32, i32, i32, pointer, i32, i32]
    library.linear_tiles.restype = None
    library.certified_argmax.argtypes = [ctypes.POINTER(Linear), ctypes.POINTER(Linear), i32, pointer, i32, pointer,
                                         pointer, pointer, pointer, pointer, i32]
    library.certified_argmax.restype = ctypes.c_long
    library.argmax_rows.argtypes = [ctypes.POINTER(Linear), i32, pointer, i32, pointer, pointer, pointer, i32]
    library.argmax_rows.restype = None
    library.draft_choice.argtypes = [ctypes.POINTER(Linear), pointer, pointer, i32, pointer, i32, pointer, pointer,
                                     i32, pointer, pointer, i32]
    library.draft_choice.restype = None
    library.quantize_int8_vectors.argtypes = [pointer, i32, ctypes.c_long, i32, i32, pointer, pointer, i32]
    library.quantize_int8_vectors.restype = None
    library.linear_int8_bf16.argtypes = [ctypes.POINTER(Linear), i32, pointer, i32, pointer, i32, i32, i32]
    library.linear_int8_bf16.restype = i32
    library.linear_int8_f32.argtypes = [ctypes.POINTER(Linear), i32, pointer, i32, pointer, i32, i32, i32]
    library.linear_int8_f32.restype = i32
    library.int8_tiles.argtypes = []
    library.int8_tiles.restype = i32
    library.encoder_attention_bf16.argtypes = [pointer, i32, i32, i32, ctypes.c_float, pointer, pointer, i32]
    library.encoder_attention_bf16.restype = i32
    library.encoder_attention_f32.argtypes = [pointer, i32, i32, i32, ctypes.c_float, i32, pointer, pointer, i32]
    library.encoder_attention_f32.restype = i32
    return library


def load_build(isa: str) -> ctypes.CDLL:
    """The kernels built for `isa` (this process's build, or another one this CPU runs: tests compare builds);
    RuntimeError when this machine cannot build or run it."""
    import platform

    from .backend import choose, cpu_features

    return _load(choose(cpu_features(), platform.machine(), isa))[0]


def _load(chosen=None) -> tuple[ctypes.CDLL, bool, float]:
    """(the library, whether it is threaded with OpenMP, the seconds compiling it took)"""
    chosen = chosen or _chosen_backend()
    if not chosen.native:
        raise RuntimeError(chosen.reason)
    found = compiler()
    if found is None:
        raise RuntimeError("no C compiler (gcc or clang) found")
    import torch  # noqa: F401  (its OpenMP runtime must be loaded first, so the kernels share it)

    try:
        path, seconds = build(found, chosen.isa, (*chosen.flags, OPENMP))
        openmp = True
    except RuntimeError:  # a compiler without OpenMP (Apple's clang): single-threaded kernels, the same results
        path, seconds = build(found, chosen.isa, chosen.flags)
        openmp = False
    return _declare(ctypes.CDLL(str(path))), openmp, seconds


@dataclass(frozen=True)
class Capabilities:
    """What runs natively in this process: the one value every caller decides by (`capabilities()`), derived from
    the build backend.py chose and whether its library loaded."""

    isa: str  # the kernel build that runs: avx512, avx2, neon, or "none" (everything on PyTorch)
    decoder: bool  # the decoder step, the drafters' products and the certified argmax (every build has them)
    encoder_attention: bool  # the encoder's flash attention, bfloat16 and float32 (every build has it)
    # int8 products of int8 activations (int8-vnni weights: the int8 encoder, the drafters): VNNI's dot products
    # where the CPU has them (AVX512-VNNI, AVX-VNNI, NEON dotprod), exact 16-bit pair sums elsewhere
    int8_products: bool
    # those products by a dot-product instruction (backend.py, Backend.int8_dot_product), where two int8 products cost
    # less than one float32 one (the int8 encoder's weights x values, encoder_attention_f32)
    int8_dot_product: bool
    # the int8 encoder's activations between its products: float32 on every build, since its attention's int8
    # products (encoder_attention_f32) beat the bfloat16 kernel the bfloat16 form runs, AVX-512 included
    # (docs/compute.md, "The int8 encoder's form on AVX-512"); "bfloat16" is the other form, kept for comparison
    int8_between: str
    # the int8 encoder's sums (its linear layers and its attention's) on AMX tiles (Sapphire Rapids and later: the
    # build has them and Linux lent them to this process; native/int8_tiles.h): the same integers as VNNI's, faster
    int8_tiles: bool
    # the storage of an exact int8 decoder's linear layers: "int8-vnni" (int8 activations) where that measured
    # faster, else "int8" (float32 activations); backend.py, EXACT_INT8_LAYERS
    int8_layers: str
    threaded: bool  # the kernels use OpenMP's threads (else each runs on the calling thread, with the same results)
    reason: str | None  # why nothing runs natively

    @property
    def description(self) -> str:
        """What runs here, in a few words: "native avx2" (" + AMX" with int8 tiles, ", single-threaded" without
        OpenMP) or "pytorch"."""
        if self.isa == "none":
            return "pytorch"
        tiles = " + AMX" if self.int8_tiles else ""
        return f"native {self.isa}{tiles}" + ("" if self.threaded else ", single-threaded")

    @property
    def fastest_int8(self) -> str:
        """The int8 storage format for products that need no exactness: int8-vnni where it runs, else int8."""
        return "int8-vnni" if self.int8_products else "int8"


def capabilities() -> Capabilities:
    """This process's Capabilities (the build and its library are decided and loaded once)."""
    loaded = kernels() is not None
    isa = _chosen_backend().isa if loaded else "none"
    return Capabilities(isa=isa, decoder=loaded, encoder_attention=loaded, int8_products=loaded,
                        int8_dot_product=loaded and _chosen_backend().int8_dot_product,
                        int8_between="float32",
                        int8_tiles=loaded and bool(kernels().int8_tiles()),
                        int8_layers=exact_int8_layers() if loaded else "int8",
                        threaded=loaded and _state.get("openmp", True), reason=None if loaded else unavailable_reason())


def kernels() -> ctypes.CDLL | None:
    """The native kernels, built and loaded once per process; None (see unavailable_reason) when impossible."""
    if "library" not in _state:
        try:
            _state["library"], _state["openmp"], _state["compile_seconds"] = _load()
        except Exception as error:  # any failure means: use the PyTorch path
            _state["library"], _state["reason"] = None, str(error) or type(error).__name__
    return _state["library"]


def unavailable_reason() -> str | None:
    kernels()
    return _state.get("reason")


def compile_seconds() -> float:
    """Seconds this process spent compiling the kernels (0.0 when they came from the cache)."""
    kernels()
    return _state.get("compile_seconds", 0.0)


def announce_fallback(why: str) -> None:
    """Warn once per process that the CPU path runs on PyTorch, and why (not when the user asked for it)."""
    if _state.get("announced") or _chosen_backend().forced and not _chosen_backend().native:
        return
    _state["announced"] = True
    warnings.warn(f"the native CPU kernels do not run here ({why}): running on PyTorch, several times slower",
                  RuntimeWarning, stacklevel=3)
