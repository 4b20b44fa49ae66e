"""One torch thread for a test module: import `one_thread` into it (an autouse fixture)."""

from __future__ import annotations

import os

import pytest
import torch

# threads a test's own reference (CTranslate2's cpu_threads) computes on: its xdist worker's share (conftest.py)
THREADS = int(os.environ.get("ASR_SPECDEC_TEST_THREADS", "2"))


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Autouse where imported: tiny models (and short real-weights runs) run fastest on one thread (more threads
    only add synchronisation, which on a busy 2-core machine costs several times the work itself)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
