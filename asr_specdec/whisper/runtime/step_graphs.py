"""How the PyTorch backend runs a pass: as it comes (`EagerPasses`: a CPU), or on CUDA
from graphs (`GraphedPasses`): each bucket of a cache (the pass's table shape and attended slots: the step's
shapes are fixed per bucket, torch_decoder.py) is captured once, on its first pass, and replayed after, so a
step of ~700 kernels costs one launch. A graph writes into the cache's tensors at their addresses, so a
cache's graphs go with its rows (`KVCache.keep` clears them) and the cache itself.

Graphs are the default on CUDA since their first GPU runs (H200, 2026-11-28, docs/gpu.md): a large-v3-shaped
step 22.1 ms eagerly, 2.70 ms replayed; tiny.en on the shared clips 2.1x faster, the same tokens; the smoke run
28 of 28. ASR_SPECDEC_CUDA_GRAPHS=0 turns them off. tests/whisper/test_step_graphs.py checks their bookkeeping
on a CPU with a stand-in for the capture.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

import torch

from .kv_cache import KVCache

Run = Callable[[torch.Tensor], torch.Tensor]  # a pass's table [rows, n + 1] -> final hidden states


class Passes(Protocol):
    def hidden(self, run: Run, cache: KVCache, table: torch.Tensor, bucket: tuple) -> torch.Tensor:
        """The final hidden states of the pass `run(table)` (`bucket`: what fixes its shapes besides the table's)."""


class EagerPasses:
    def hidden(self, run: Run, cache: KVCache, table: torch.Tensor, bucket: tuple) -> torch.Tensor:
        return run(table)


class CudaCapture:
    """Captures `run(static_table)` into a CUDA graph; returns its replay, which gives the graph's output tensor.

    A backend's graphs share one memory pool, which this holds open for its own lifetime (a `torch.cuda.MemPool`
    counts as one user of the pool). With a bare pool id (`torch.cuda.graph_pool_handle()`) the graphs were its
    only users: when a cache's rows changed and its graphs went, the pool's count fell to 0 while the graphs'
    outputs still held blocks in it, and PyTorch's allocator fails the next capture into that pool with an
    internal assert (`use_count > 0`; the first GPU run with graphs on, 2026-11-28, docs/gpu.md)."""

    def __init__(self):
        self.pool = None  # made at the first capture: a backend is built before anything runs on its device

    def __call__(self, run: Run, static_table: torch.Tensor) -> Callable[[], torch.Tensor]:
        if self.pool is None:
            self.pool = torch.cuda.MemPool()
        graph = torch.cuda.CUDAGraph()
        # thread_local: another thread's CUDA calls (a server's second model) cannot void this capture
        with torch.cuda.graph(graph, pool=self.pool.id, capture_error_mode="thread_local"):
            output = run(static_table)

        def replay() -> torch.Tensor:
            graph.replay()
            return output
        return replay


class GraphedPasses:
    """A bucket's first pass runs eagerly (on a side stream on CUDA, as capture needs: it also warms the kernels
    up), then is captured; later passes copy their table into the captured one and replay. The output is cloned:
    the next replay overwrites the graph's."""

    def __init__(self, capture: Callable[[Run, torch.Tensor], Callable[[], torch.Tensor]] | None = None):
        self.capture = capture or CudaCapture()

    def hidden(self, run: Run, cache: KVCache, table: torch.Tensor, bucket: tuple) -> torch.Tensor:
        key = (tuple(table.shape), bucket)
        held = cache.graphs.get(key)
        if held is not None:
            static_table, replay = held
            static_table.copy_(table)
            return replay().clone()
        hidden = self._warm_up(run, table)
        static_table = table.clone()
        cache.graphs[key] = (static_table, self.capture(run, static_table))
        return hidden

    @staticmethod
    def _warm_up(run: Run, table: torch.Tensor) -> torch.Tensor:
        if table.device.type != "cuda":
            return run(table)
        current = torch.cuda.current_stream(table.device)
        side = torch.cuda.Stream(table.device)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            hidden = run(table)
        current.wait_stream(side)
        return hidden


def choose_passes(device: torch.device) -> Passes:
    """Graphs on CUDA (ASR_SPECDEC_CUDA_GRAPHS=0 turns them off), eager passes elsewhere."""
    if device.type == "cuda" and os.environ.get("ASR_SPECDEC_CUDA_GRAPHS", "1") != "0":
        return GraphedPasses()
    return EagerPasses()
