"""The one place that decides the CPU backend: which kernel build runs here (avx512, avx2, neon or none), compiled
with which flags, and which compute type `auto` means on it. Nothing else in the package reads CPU features.

The CPU's features come from /proc/cpuinfo on Linux (x86 `flags`, ARM `Features`) and from sysctl on macOS;
elsewhere none are known and the build is `none` (PyTorch). `ASR_SPECDEC_ISA=avx512|avx2|neon|none` forces a
build (refused, with the reason, when this CPU cannot run it); `ASR_SPECDEC_NATIVE=0` is `none`; `ASR_SPECDEC_AMX=0`
builds without AMX tiles on a CPU that has them (the same bits, VNNI's speed: for measuring).
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache

ISAS = ("avx512", "avx2", "neon", "none")
# what each build needs of the CPU (Linux names), and the compiler flags it is built with
REQUIRED = {
    "avx512": ("avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "fma", "f16c"),
    "avx2": ("avx2", "fma", "f16c"),
    "neon": ("asimd",),
}
FLAGS = {
    "avx512": ("-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni", "-mavx512bf16", "-mf16c", "-mfma"),
    "avx2": ("-mavx2", "-mfma", "-mf16c"),  # never an -mavx512 flag: the build cannot contain AVX-512 code
    "neon": ("-march=armv8-a",),
}
WITH_FEATURE = {  # a build's flags where the CPU has the feature: faster int8 sums, the same integers
    # AMX (Sapphire Rapids and later): the int8 encoder's sums on tiles (native/int8_tiles.h)
    ("avx512", "amx_int8"): (*FLAGS["avx512"], "-mamx-tile", "-mamx-int8", "-DASR_SPECDEC_AMX"),
    ("avx2", "avx_vnni"): (*FLAGS["avx2"], "-mavxvnni"),
    # ASR_SPECDEC_EVEX_VNNI=1 (a measuring device, see EVEX_VNNI): AVX-VNNI's vpdpbusd on ymm in its AVX512-VNNI form
    ("avx2", "avx_vnni_evex"): (*FLAGS["avx2"], "-DASR_SPECDEC_EVEX_VNNI"),
    ("neon", "asimddp"): ("-march=armv8.2-a+dotprod",),
}
# To measure an AVX-VNNI CPU (Alder Lake and later: vpdpbusd on 256-bit registers, no AVX-512) on an AVX-512 CPU
# without AVX-VNNI (Zen 4): with ASR_SPECDEC_EVEX_VNNI=1 under ../shared/tools/avxvnni-sim.sh the avx2 build writes
# vpdpbusd in its EVEX form on ymm0-15 (the same instruction and integers; it faults where AVX512-VNNI is missing)
EVEX_VNNI = "avx_vnni_evex"
# the fastest compute type measured to keep float32's WER on the shared clips, per build (docs/compute.md, "auto per
# build"). AVX-512 (it needs AVX512-BF16): the bfloat16 encoder measured faster than the int8 products at the same WER
# (the speed table of docs/benchmarks.md). AVX2: the int8 encoder with float32 activations between its products,
# with or without a dot-product instruction: on a Zen 3 (no VNNI) 9.57 s against float32's 11.72 s on the 12 shared
# clips, 12/12 of float32's text (tests/native/test_builds.py MEASURED_BASE_AVX2); with AVX-VNNI further ahead. NEON
# is unmeasured and keeps float32 (no native bfloat16, and its int8 sums have not been timed on a real ARM CPU).
AUTO_COMPUTE = {"avx512": ("bfloat16", "float32"), "avx2": ("int8", "float32"), "neon": ("float32", "float32")}
# with AMX tiles for its sums (its linear layers' and its attention's) the int8 encoder measured faster than the
# bfloat16 encoder at the same WER and float32's text on the 12 shared clips (docs/compute.md, "The int8 encoder's
# form on AVX-512")
AUTO_COMPUTE_WITH = {("avx512", "amx_int8"): ("int8", "float32")}
# wider models, per build: model width (d_model) -> the fastest compute type measured at that width, which holds from
# it up to the next width listed; narrower models keep the choices above. AVX-512: issue 49's table (random weights at
# small 768, medium 1024, large-v3-turbo and large-v3 1280, 2 threads, 30-s window, 100 tokens forced): int8's whole
# call 1.19-1.34x that of the bfloat16:float32 base's choice gives there. AVX2: the size benchmark of the one run
# (docs/benchmarks.md, Every size; tests/native/test_builds.py MEASURED_AVX2): int8's encoder window and whole
# 100-token call are faster than float32's at every width (large-v3's call 34.95 s against 44.98 s).
# NEON, not measured, keeps its choice.
INT8_FROM_SMALL = {768: ("int8", "int8"), 1024: ("int8", "int8"), 1280: ("int8", "int8")}
# the storage of an exact int8 decoder's linear layers, per build: on AVX-512 int8-vnni, int8 activations (each row
# quantized alone, its outliers kept in float32, exact int32 sums by vpdpbusd, as CTranslate2's int8 multiplies), where
# at large-v3's shapes a verification of 6 tokens measured 47-48 ms against 61-65 ms with float32 activations and a
# step the same (31-38 ms, memory-bound); elsewhere int8 weights times float32 activations: under avxvnni-sim int8
# activations' verification took 96-98 ms against 79-80 ms, under avx2-sim (no dot product) their step 60-66 ms
# against 53 ms (docs/compute.md, "The int8 decoder's activations")
EXACT_INT8_LAYERS = {"avx512": "int8-vnni"}
AUTO_COMPUTE_BY_WIDTH = {"avx512": INT8_FROM_SMALL, "avx2": INT8_FROM_SMALL}
_MACOS_X86 = {"AVX2": "avx2", "FMA": "fma", "F16C": "f16c", "AVX512F": "avx512f", "AVX512BW": "avx512bw",
              "AVX512VL": "avx512vl", "AVX512VNNI": "avx512_vnni", "AVX512BF16": "avx512_bf16",
              "AMXINT8": "amx_int8"}


@dataclass(frozen=True)
class Backend:
    isa: str                    # avx512, avx2, neon or none
    flags: tuple[str, ...]      # the compiler's target flags for this build
    reason: str | None = None   # why the build is `none`
    forced: bool = False        # chosen by ASR_SPECDEC_ISA (or ASR_SPECDEC_NATIVE=0), not refused

    @property
    def native(self) -> bool:
        return self.isa != "none"

    @property
    def int8_dot_product(self) -> bool:
        """Whether the build multiplies int8 with a dot-product instruction (vpdpbusd, sdot): AVX-512's (it needs
        AVX512-VNNI) and the builds with a WITH_FEATURE extension, not the sign trick or NEON's widening multiplies."""
        return self.isa == "avx512" or self.flags in WITH_FEATURE.values()


def _linux_features() -> frozenset[str]:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _sysctl(name: str) -> str:
    try:
        return subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _macos_features() -> frozenset[str]:
    if platform.machine() == "arm64":
        return frozenset({"asimd"} | ({"asimddp"} if _sysctl("hw.optional.arm.FEAT_DotProd") == "1" else set()))
    words = f"{_sysctl('machdep.cpu.features')} {_sysctl('machdep.cpu.leaf7_features')}".upper().split()
    return frozenset(_MACOS_X86[word.replace(".", "").replace("_", "")] for word in words
                     if word.replace(".", "").replace("_", "") in _MACOS_X86)


@lru_cache(maxsize=1)
def cpu_features() -> frozenset[str]:
    """This CPU's features by their Linux names (empty where they cannot be read)."""
    if sys.platform.startswith("linux"):
        measuring = os.environ.get("ASR_SPECDEC_EVEX_VNNI", "") == "1"
        without_tiles = {"amx_int8"} if os.environ.get("ASR_SPECDEC_AMX", "") == "0" else set()
        return _linux_features() - without_tiles | ({EVEX_VNNI} if measuring else set())
    if sys.platform == "darwin":
        return _macos_features()
    return frozenset()


def _machine_isas(machine: str) -> tuple[str, ...]:
    machine = machine.lower()
    if machine in ("x86_64", "amd64"):
        return ("avx512", "avx2")
    if machine in ("aarch64", "arm64"):
        return ("neon",)
    return ()


def choose(features: frozenset[str], machine: str, forced: str | None = None) -> Backend:
    """The build for a CPU with `features` (Linux names) on `machine` (platform.machine()); `forced`: the
    ASR_SPECDEC_ISA value, if any."""
    candidates = _machine_isas(machine)
    if forced is not None:
        forced = forced.strip().lower()
        if forced not in ISAS:
            return Backend("none", (), f"unknown ASR_SPECDEC_ISA={forced} (use {', '.join(ISAS)})")
        if forced == "none":
            return Backend("none", (), "ASR_SPECDEC_ISA=none", True)
        missing = [flag for flag in REQUIRED[forced] if flag not in features]
        if forced not in candidates or missing:
            lacks = ", ".join(missing) if forced in candidates else f"a {forced} CPU ({machine})"
            return Backend("none", (), f"ASR_SPECDEC_ISA={forced}, but this machine lacks {lacks}")
        candidates = (forced,)
    for isa in candidates:
        if all(flag in features for flag in REQUIRED[isa]):
            flags = next((flags for (build, feature), flags in WITH_FEATURE.items()
                          if build == isa and feature in features), FLAGS[isa])
            return Backend(isa, flags, None, forced is not None)
    if not candidates:
        return Backend("none", (), f"no kernel build for {machine or 'this machine'}")
    if not features:
        return Backend("none", (), "this CPU's features could not be read")
    return Backend("none", (), f"this CPU lacks {', '.join(f for f in REQUIRED[candidates[-1]] if f not in features)}")


@lru_cache(maxsize=1)
def backend() -> Backend:
    """The build this process uses (decided once)."""
    if os.environ.get("ASR_SPECDEC_NATIVE", "1").lower() in ("0", "off", "false", "no"):
        return Backend("none", (), "disabled by ASR_SPECDEC_NATIVE=0", True)
    return choose(cpu_features(), platform.machine(), os.environ.get("ASR_SPECDEC_ISA") or None)


def exact_int8_layers() -> str:
    """The storage format of an exact int8 decoder's linear layers with this process's build (EXACT_INT8_LAYERS)."""
    return EXACT_INT8_LAYERS.get(backend().isa, "int8")


def native_bfloat16() -> bool:
    """Whether the CPU multiplies bfloat16 natively (AVX512-BF16 or AMX): PyTorch's bfloat16 is fast there."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_features())


def auto_compute(kernels_loaded: bool, width: int | None = None) -> tuple[str, str]:
    """(encoder, decoder) precisions that `auto` means on this CPU for a model `width` wide (its d_model; None:
    as base): the build's measured choice at that width when its kernels loaded; without them a bfloat16 encoder
    where PyTorch has native bfloat16, else float32."""
    chosen = backend()
    measured_widths = [listed for listed in AUTO_COMPUTE_BY_WIDTH.get(chosen.isa, {}) if width and listed <= width]
    if kernels_loaded and measured_widths:
        return AUTO_COMPUTE_BY_WIDTH[chosen.isa][max(measured_widths)]
    if kernels_loaded and chosen.isa in AUTO_COMPUTE:
        with_feature = [AUTO_COMPUTE_WITH[build, feature] for build, feature in AUTO_COMPUTE_WITH
                        if build == chosen.isa and WITH_FEATURE[build, feature] == chosen.flags]
        return with_feature[0] if with_feature else AUTO_COMPUTE[chosen.isa]
    return ("bfloat16", "float32") if native_bfloat16() else ("float32", "float32")
