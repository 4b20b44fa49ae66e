"""A decoder step's operations, counted: on a GPU every aten operation is a kernel launch (about 15 µs to issue
on an H200), so a large-v3 step of 1,600 operations cost 13x its weights' reading time there. At large-v3's
structure (32 layers, 20 heads, vocabulary 51866; a narrow width keeps it cheap on a CPU: the count does not
depend on it) one step of the PyTorch path dispatches at most 700 operations and reads nothing back to the host;
the layer-by-layer arithmetic it replaced dispatches over twice that (what this count would have caught)."""

from __future__ import annotations

from collections import Counter

import torch

from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner
from asr_specdec.whisper.runtime.torch_decoder import TorchBackend
from eval.bench.gpu import LARGE_V3, random_whisper
from eval.bench.ops import count_operations

STEP_LIMIT = 700
NARROW = {**LARGE_V3, "d_model": 160, "decoder_ffn_dim": 320, "encoder_layers": 1, "encoder_ffn_dim": 16}
PREFIX = 30


def step_operations(runner: WhisperDecoderRunner, cache, fed: int) -> Counter:
    """The operations of feeding `fed` tokens after the prefix and choosing the greedy tokens (before reading
    them back), as the decoding loop runs it (inference mode)."""
    def step():
        hidden = runner.feed_rows(cache, [list(range(5, 5 + fed))], [PREFIX])[0]
        runner.backend.greedy(hidden, None, None, certified=False)

    with torch.inference_mode():
        return count_operations(step)


def test_a_large_v3_shaped_step_dispatches_at_most_700_operations(monkeypatch):
    model = random_whisper(NARROW, "cpu", torch.float32)
    runner, draft = WhisperDecoderRunner(model, native=False), WhisperDecoderRunner(model, 2, native=False)
    with torch.inference_mode():
        encoded = torch.randn(1, NARROW["max_source_positions"], NARROW["d_model"])
        cache = runner.new_cache(encoded)
        runner.feed_rows(cache, [list(range(PREFIX))], [0])
    step, verification = step_operations(runner, cache, 1), step_operations(runner, cache, 9)
    draft_step = step_operations(draft, cache, 1)
    assert sum(step.values()) <= STEP_LIMIT, step
    assert sum(verification.values()) <= STEP_LIMIT + 20, verification  # + the projection of several rows
    assert sum(draft_step.values()) <= 2 * 22 + 30, draft_step  # an early exit's 2 layers share the step
    assert step["aten._local_scalar_dense"] == 0  # no host read inside a step
    assert step["aten.scaled_dot_product_attention"] == 2 * 32 and step["aten.index_put_"] == 32

    monkeypatch.setattr(TorchBackend, "fixed_step", staticmethod(lambda cache, dtype: False))
    assert sum(step_operations(runner, cache, 1).values()) > 2 * STEP_LIMIT  # layer by layer, as before


def test_the_step_and_the_layer_by_layer_arithmetic_agree(monkeypatch):
    model = random_whisper({**NARROW, "decoder_layers": 3, "vocab_size": 600}, "cpu", torch.float32)
    runner = WhisperDecoderRunner(model, native=False)
    tokens = [[3, 9, 27, 81, 243], [5, 25, 125, 4, 16]]
    with torch.inference_mode():
        encoded = torch.randn(2, NARROW["max_source_positions"], NARROW["d_model"])

        def run():
            cache = runner.new_cache(encoded)
            first = runner.feed_rows(cache, [tokens[0][:3], tokens[1][:1]], [0, 0])
            return first + runner.feed_rows(cache, [tokens[0][3:], tokens[1][1:]], [3, 1])

        fixed = run()
        monkeypatch.setattr(TorchBackend, "fixed_step", staticmethod(lambda cache, dtype: False))
        layered = run()
    for got, expected in zip(fixed, layered):
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
