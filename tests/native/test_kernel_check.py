"""The C driver kernel_check.c, built with the kernel sources for ARM64 (NEON, with and without the dot-product
extension) and run under qemu-aarch64, and built for this CPU's own build: batch invariance bit for bit, agreement
with float64, the certified argmax equal to the full argmax. Every build prints a digest of its outputs' bits, and
they are equal: the kernels compute the same numbers on every instruction set. ARM needs Debian's
gcc-aarch64-linux-gnu and qemu-user (.ci/run installs them)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

from asr_specdec.native import BASE_FLAGS, SOURCES, kernels
from asr_specdec.native.backend import EVEX_VNNI, FLAGS, WITH_FEATURE, backend, cpu_features

DRIVER = Path(__file__).with_name("kernel_check.c")
CROSS, QEMU = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
NEON_FLAGS = {"neon": FLAGS["neon"], "neon+dotprod": ("-march=armv8.2-a+dotprod",)}


def _run(compiler: str, flags: tuple[str, ...], runner: list[str], scratch: Path, library: str | None = None) -> str:
    """The driver built with `flags` and run; it is linked with `library` (a built kernel library), else with the
    kernel sources built with the same flags."""
    program = scratch / "kernel_check"
    linked = [library, f"-Wl,-rpath,{Path(library).parent}"] if library else list(map(str, SOURCES))
    command = [compiler, *(flag for flag in BASE_FLAGS if flag not in ("-shared", "-fPIC")), *flags, "-fopenmp",
               str(DRIVER), *linked, "-o", str(program), "-lm"]
    built = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    ran = subprocess.run([*runner, str(program)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and ran.stdout.startswith("ok "), ran.stdout + ran.stderr
    return ran.stdout.split()[-1]


@lru_cache(maxsize=1)
def _native_digest() -> str | None:
    """The digest of the build this process loaded (None without one): the driver linked with its library."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None or kernels() is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:
        return _run(compiler, backend().flags, [], Path(scratch), kernels()._name)


@pytest.mark.skipif(CROSS is None or QEMU is None,
                    reason="no aarch64-linux-gnu-gcc or qemu-aarch64 (apt-get install gcc-aarch64-linux-gnu qemu-user)")
@pytest.mark.parametrize("build", sorted(NEON_FLAGS))
def test_the_neon_build_passes_the_kernel_checks_under_qemu(build, tmp_path):
    digest = _run(CROSS, (*NEON_FLAGS[build], "-static"), [QEMU, "-cpu", "max"], tmp_path)
    native = _native_digest()
    if native is not None:
        assert digest == native, f"{build} and {backend().isa} computed different bits"


@pytest.mark.skipif(not backend().native or not (shutil.which("gcc") or shutil.which("cc")),
                    reason="no native kernel build or no C compiler here")
def test_this_cpus_build_passes_the_kernel_checks():
    assert len(_native_digest()) == 16


@pytest.mark.skipif(not backend().native or "avx512_vnni" not in cpu_features() or not shutil.which("gcc"),
                    reason="needs an x86 CPU with AVX512-VNNI and gcc")
def test_the_avx2_build_with_vpdpbusd_gives_the_same_bits(tmp_path):
    """The avx2 build's vpdpbusd path (as on an AVX-VNNI CPU; here in its EVEX form, ASR_SPECDEC_EVEX_VNNI)."""
    digest = _run(shutil.which("gcc"), WITH_FEATURE["avx2", EVEX_VNNI], [], tmp_path)
    assert digest == _native_digest()
