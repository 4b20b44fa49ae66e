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


@pytest.fixture(scope="session", autouse=True)
def pack_cache(tmp_path_factory):
    """Converted packs go to a per-session cache, never the user's ~/.cache (unless CI asks otherwise)."""
    if "ASR_SPECDEC_TEST_CACHE" in os.environ:
        os.environ["ASR_SPECDEC_CACHE"] = os.environ["ASR_SPECDEC_TEST_CACHE"]
    else:
        os.environ["ASR_SPECDEC_CACHE"] = str(tmp_path_factory.mktemp("asr_specdec_cache"))
    return Path(os.environ["ASR_SPECDEC_CACHE"])


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
