"""The PyTorch backend's graphed passes (step_graphs.py), checked on a CPU with a stand-in for CUDA's capture (a
"graph" that reruns the captured pass on its static table): each bucket is captured once on its first pass and
replayed after with the new table copied in, replays give the eager passes' numbers, rows that leave drop the
cache's graphs, and every tensor is made on its data's device."""

from __future__ import annotations

import contextlib

import torch

from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner
from asr_specdec.whisper.runtime.step_graphs import EagerPasses, GraphedPasses
from eval.bench.gpu import TINY, random_whisper

from ..devices import explicit_devices


class StandInCapture:
    def __init__(self):
        self.captured, self.replayed = 0, 0

    def __call__(self, run, static_table):
        self.captured += 1

        def replay():
            self.replayed += 1
            return run(static_table)  # what a CUDA graph does: the captured pass over the static table's contents
        return replay


def test_graphed_passes_capture_each_bucket_once_and_replay_the_eager_numbers():
    model = random_whisper({**TINY, "decoder_layers": 2, "vocab_size": 700}, "cpu", torch.float32)
    eager, graphed = WhisperDecoderRunner(model, native=False), WhisperDecoderRunner(model, native=False)
    capture = StandInCapture()
    graphed.backend.passes = GraphedPasses(capture)
    assert isinstance(eager.backend.passes, EagerPasses)  # a CPU takes the same step without graphs
    # (feeds, starts): a 2-row prompt, then steps of one token (crossing from 64 attended slots to 128: the
    # positions between hold zeros, alike in both) and verifications of three
    passes = [([[1, 2, 3, 4], [5, 6]], [0, 0])]
    passes += [([[10 + position], [20 + position]], [60 + position, 58 + position]) for position in range(6)]
    passes += [([[7, 8, 9], [3, 2, 1]], [66, 64]), ([[9, 8, 7], [1, 2, 3]], [69, 67])]
    with torch.inference_mode(), explicit_devices() as calls:
        encoded = torch.randn(2, TINY["max_source_positions"], TINY["d_model"])
        caches = eager.new_cache(encoded), graphed.new_cache(encoded)
        for feeds, starts in passes:
            expected = eager.feed_rows(caches[0], feeds, starts)
            got = graphed.feed_rows(caches[1], feeds, starts)
            assert all(torch.equal(row, other) for row, other in zip(got, expected))
        buckets = dict(caches[1].graphs)
        caches[1].keep(torch.tensor([1], device="cpu"), {})
    assert calls == []
    # the prompt; one-token steps attending 64 and then 128 slots; three-token verifications
    assert capture.captured == len(buckets) == 4
    assert capture.replayed == len(passes) - capture.captured
    assert caches[1].graphs == {}  # the rows changed: the graphs held the old tensors


class PrivatePoolRule:
    """PyTorch's CUDA caching allocator as graph capture sees it (CUDACachingAllocator.cpp): a capture into a pool
    id it does not track makes the pool with one user; into a tracked pool, it asserts the pool still has a user
    and adds one; a graph's reset drops its user, and a pool whose users are gone stays tracked while blocks in it
    live (here: always, as the graphs' outputs do); a MemPool object is a user for its own lifetime."""

    def __init__(self):
        self.users: dict[int, int] = {}
        self.next_id = 0

    def fresh_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def mem_pool(self):
        rule = self

        class MemPool:
            def __init__(self):
                self.id = rule.fresh_id()
                rule.users[self.id] = 1

            def __del__(self):
                rule.users[self.id] -= 1
        return MemPool

    def graph_class(self):
        rule = self

        class CUDAGraph:
            pool = None

            def __del__(self):
                if self.pool is not None:
                    rule.users[self.pool] -= 1
        return CUDAGraph

    @contextlib.contextmanager
    def capture(self, graph, pool, capture_error_mode="global"):
        if pool in self.users:
            if self.users[pool] <= 0:
                raise RuntimeError("it->second->use_count > 0 INTERNAL ASSERT FAILED")
            self.users[pool] += 1
        else:
            self.users[pool] = 1
        graph.pool = pool
        yield


def test_graphs_keep_their_memory_pool_open_across_caches(monkeypatch):
    """The first GPU run with graphs on (docs/gpu.md, 2026-11-28) failed every call after a cache's graphs had
    gone: the backend's pool had no user left. Under the allocator's rule the bare pool id fails that way; the
    capture that holds a MemPool captures again after its caches' graphs are gone."""
    from asr_specdec.whisper.runtime import step_graphs

    rule = PrivatePoolRule()
    monkeypatch.setattr(torch.cuda, "MemPool", rule.mem_pool())
    monkeypatch.setattr(torch.cuda, "CUDAGraph", rule.graph_class())
    monkeypatch.setattr(torch.cuda, "graph", rule.capture)
    table = torch.zeros(1, 2)

    def run(static_table):
        return static_table + 1

    handle = rule.fresh_id()  # what torch.cuda.graph_pool_handle() gives: an id, no user
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=handle):
        run(table)
    del graph
    try:
        with torch.cuda.graph(torch.cuda.CUDAGraph(), pool=handle):
            run(table)
        raise AssertionError("the rule should refuse a capture into a pool with no user")
    except RuntimeError as error:
        assert "use_count > 0" in str(error)

    model = random_whisper({**TINY, "decoder_layers": 2, "vocab_size": 700}, "cpu", torch.float32)
    runner = WhisperDecoderRunner(model, native=False)
    capture = step_graphs.CudaCapture()
    runner.backend.passes = GraphedPasses(capture)
    with torch.inference_mode():
        for _call in range(3):  # three calls, each with its own cache (its graphs go with it)
            cache = runner.new_cache(torch.randn(1, TINY["max_source_positions"], TINY["d_model"]))
            runner.feed_rows(cache, [[1, 2, 3]], [0])
            runner.feed_rows(cache, [[4]], [3])
            assert len(cache.graphs) == 2
            del cache
            assert rule.users[capture.pool.id] == 1  # the capture's own hold: the graphs are gone


def test_cuda_takes_graphs_unless_turned_off_and_a_cpu_never(monkeypatch):
    from asr_specdec.whisper.runtime.step_graphs import choose_passes

    monkeypatch.delenv("ASR_SPECDEC_CUDA_GRAPHS", raising=False)
    assert isinstance(choose_passes(torch.device("cuda")), GraphedPasses)  # nothing touches CUDA until a capture
    assert isinstance(choose_passes(torch.device("cpu")), EagerPasses)
    monkeypatch.setenv("ASR_SPECDEC_CUDA_GRAPHS", "0")
    assert isinstance(choose_passes(torch.device("cuda")), EagerPasses)
    monkeypatch.setenv("ASR_SPECDEC_CUDA_GRAPHS", "1")
    assert isinstance(choose_passes(torch.device("cpu")), EagerPasses)
