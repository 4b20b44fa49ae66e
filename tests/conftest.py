"""Shared fixtures: the team's real speech clips, and the offline packs converted once per session."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# xdist's workers share the machine's cores: each worker (and every command it starts) computes on its share, so
# OpenMP threads of two workers never spin against each other on one core (on the 2-core CI: one thread each).
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1 and "ASR_SPECDEC_TEST_THREADS" not in os.environ:
    os.environ["ASR_SPECDEC_TEST_THREADS"] = str(max(1, (os.cpu_count() or 1) // WORKERS))
if "ASR_SPECDEC_TEST_THREADS" in os.environ:
    os.environ["OMP_NUM_THREADS"] = os.environ["ASR_SPECDEC_TEST_THREADS"]
    import torch

    torch.set_num_threads(int(os.environ["ASR_SPECDEC_TEST_THREADS"]))

SHARED_AUDIO = Path(__file__).resolve().parents[1].parent / "shared" / "audio"

# the costliest work units of the suite (an xdist group, else a module), costliest first, as `--durations=0` measured
# them on 2 cores: handed out first, so that no long one starts last while the other worker waits
COSTLIEST_FIRST = ("tests/compat/test_faster_whisper_reference.py", "ray", "tests/test_readme.py",
                   "tests/whisper/test_transcriber_real.py", "tests/compat/test_faster_whisper_clips.py",
                   "tests/native/test_kernel_check.py", "tests/whisper/test_compute_real.py",
                   "tests/whisper/test_longform_real.py", "tests/whisper/test_batch_real.py",
                   "tests/weights/test_ct2.py", "tests/text/test_real.py")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under xdist (--dist loadgroup), a module's tests run in one worker unless they name a group of their own, so
    its module fixtures (real weights decoded, a benchmark run) are made once a session, not once a worker; and the
    costliest units are handed out first (--no-loadscope-reorder keeps this order)."""
    if WORKERS < 2:
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    rank = {name: index for index, name in enumerate(COSTLIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.get_closest_marker("xdist_group").args[0], len(rank)))


def _session_cache(config) -> Path:
    """Where this session's converted packs and kernel builds go: never the user's ~/.cache (unless CI asks
    otherwise). xdist's workers share one (their temporary folders have one parent; every cache entry is written with
    one atomic rename)."""
    if "ASR_SPECDEC_TEST_CACHE" in os.environ:
        return Path(os.environ["ASR_SPECDEC_TEST_CACHE"])
    base = config._tmp_path_factory.getbasetemp()
    return base.parent / "asr_specdec_cache" if WORKERS > 1 else base / "asr_specdec_cache"


@pytest.hookimpl(trylast=True)  # after pytest's tmpdir plugin has set up the session's temporary folder
def pytest_configure(config):
    """Chosen before collection: modules ask at import whether the kernels load (their skip marks, their
    parametrizations), which builds them; under xdist the first worker builds them into the session's cache while
    the other waits, and both load that one build."""
    cache = _session_cache(config)
    cache.mkdir(parents=True, exist_ok=True)
    os.environ["ASR_SPECDEC_CACHE"] = str(cache)
    if WORKERS > 1:
        from filelock import FileLock

        from asr_specdec.native import kernels

        with FileLock(str(cache) + ".lock"):
            kernels()


@pytest.fixture(scope="session", autouse=True)
def pack_cache():
    """The session's cache (pytest_configure); under xdist the Whisper packs are converted into it once a session,
    not once a worker: the first worker converts them while the other waits."""
    cache = Path(os.environ["ASR_SPECDEC_CACHE"])
    if WORKERS > 1:
        from filelock import FileLock

        from asr_specdec.weights.packs import ensure_pack

        with FileLock(str(cache) + ".lock"):
            for pack in ("base", "tiny.en"):
                ensure_pack(pack)
    return cache


@pytest.fixture(scope="session")
def shared_audio() -> Path:
    assert (SHARED_AUDIO / "manifest.jsonl").exists(), f"missing team audio at {SHARED_AUDIO}"
    return SHARED_AUDIO


@pytest.fixture(scope="session")
def manifest(shared_audio) -> list[dict]:
    lines = (shared_audio / "manifest.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="session")
def tiny_en_dir(pack_cache) -> Path:
    from asr_specdec.weights.packs import ensure_pack

    return ensure_pack("tiny.en")


@pytest.fixture(scope="session")
def base_dir(pack_cache) -> Path:
    from asr_specdec.weights.packs import ensure_pack

    return ensure_pack("base")
