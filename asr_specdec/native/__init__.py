"""Native CPU kernels (decoder_kernels.c the decoder step, draft_kernels.c the drafter's cheaper products,
encoder_kernels.c the encoder's attention; kernels.h what they share): compiled with the system C compiler on first
use, cached on disk by a hash of the source, the flags and the compiler, and loaded with ctypes.

`kernels()` returns the loaded library, or None when this machine cannot build or run it (no C compiler,
no AVX-512, or ASR_SPECDEC_NATIVE=0); `unavailable_reason()` says why. Callers then use their PyTorch path.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
SOURCES = tuple(HERE / name for name in ("decoder_kernels.c", "draft_kernels.c", "encoder_kernels.c"))
HEADERS = (HERE / "kernels.h",)
FLAGS = ("-O3", "-std=gnu11", "-shared", "-fPIC", "-fopenmp", "-mavx512f", "-mavx512bf16", "-mavx512vl", "-mf16c",
         "-mfma", "-ffp-contract=off", "-fno-math-errno")
REQUIRED_CPU_FLAGS = ("avx512f", "f16c", "fma")

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
                ("cross_v_scale", ctypes.POINTER(ctypes.c_void_p))]


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _compiler() -> str | None:
    return os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")


def _library_path(compiler: str) -> Path:
    from ..weights.cache import cache_root

    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=30).stdout
    code = b"".join(path.read_bytes() for path in (*SOURCES, *HEADERS))
    digest = hashlib.sha256(code + " ".join(FLAGS).encode() + version.encode()).hexdigest()[:16]
    return cache_root() / "native" / f"decoder_kernels-{digest}.so"


def build(compiler: str) -> tuple[Path, float]:
    """The compiled library (compiling it now if the cache has none) and the seconds compiling took."""
    target = _library_path(compiler)
    if target.is_file():
        return target, 0.0
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as scratch:
        staged = Path(scratch) / target.name
        result = subprocess.run([compiler, *FLAGS, *map(str, SOURCES), "-o", str(staged), "-lm"], capture_output=True,
                                text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"compiling the native kernels failed: {result.stderr.strip().splitlines()[-1:]}")
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
    library.encoder_attention_bf16.argtypes = [pointer, i32, i32, i32, ctypes.c_float, pointer, pointer, i32]
    library.encoder_attention_bf16.restype = i32
    return library


def _load() -> ctypes.CDLL:
    if os.environ.get("ASR_SPECDEC_NATIVE", "1").lower() in ("0", "off", "false", "no"):
        raise RuntimeError("disabled by ASR_SPECDEC_NATIVE=0")
    if not sys.platform.startswith("linux"):
        raise RuntimeError(f"native kernels are built for Linux only, not {sys.platform}")
    missing = [flag for flag in REQUIRED_CPU_FLAGS if flag not in _cpu_flags()]
    if missing:
        raise RuntimeError(f"this CPU lacks {', '.join(missing)}")
    compiler = _compiler()
    if compiler is None:
        raise RuntimeError("no C compiler (gcc) found")
    import torch  # noqa: F401  (its OpenMP runtime must be loaded first, so the kernels share it)

    path, seconds = build(compiler)
    _state["compile_seconds"] = seconds
    return _declare(ctypes.CDLL(str(path)))


def bfloat16_attention() -> bool:
    """Whether the encoder's bfloat16 attention kernel can run here (it needs AVX512-BF16 on top)."""
    return kernels() is not None and "avx512_bf16" in _cpu_flags()


def int8_activations() -> bool:
    """Whether int8-vnni weights (int8 products of int8 activations, for drafters) can run here."""
    return kernels() is not None and "avx512_vnni" in _cpu_flags()


def fastest_int8() -> str:
    """The int8 storage format for products that need no exactness: int8-vnni where it can run, else int8."""
    return "int8-vnni" if int8_activations() else "int8"


def kernels() -> ctypes.CDLL | None:
    """The native kernels, built and loaded once per process; None (see unavailable_reason) when impossible."""
    if "library" not in _state:
        try:
            _state["library"] = _load()
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
