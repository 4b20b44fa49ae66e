"""The PyTorch backend's graphed passes (step_graphs.py), checked on a CPU with a stand-in for CUDA's capture (a
"graph" that reruns the captured pass on its static table): each bucket is captured once on its first pass and
replayed after with the new table copied in, replays give the eager passes' numbers, rows that leave drop the
cache's graphs, and every tensor is made on its data's device."""

from __future__ import annotations

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
