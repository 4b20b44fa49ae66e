"""The drafter's cheaper kernels (draft_kernels.c): int4 products, int8 cross-attention states, and the vocabulary
choice that screens with int4 rows and settles with int8 ones. A draft needs no exactness, so these are checked
against what they approximate: close products, the same choice where the best token leads, and never a token
the rules forbid."""

from __future__ import annotations

import ctypes

import pytest
import torch

from asr_specdec.native import capabilities, kernels
from asr_specdec.native.packing import pack_linear, quantize_int8
from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner

from ..tiny_whisper import encoder_output, tiny_whisper

pytestmark = pytest.mark.skipif(not capabilities().int8_products, reason="no native kernels here")


def product(packed, x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(x.shape[0], packed.n)
    kernels().linear_forward(ctypes.byref(packed.struct), x.shape[0], x.contiguous().data_ptr(), x.shape[1],
                             out.data_ptr(), packed.n, 2)
    return out


@pytest.mark.parametrize("shape", [(200, 512), (70, 64), (130, 2048)])
def test_int4_products_are_the_dequantized_weights_times_the_activations(shape):
    generator = torch.Generator().manual_seed(shape[0])
    weight, bias = torch.randn(*shape, generator=generator), torch.randn(shape[0], generator=generator)
    packed = pack_linear(weight, bias, "int4-vnni")
    dequantized = packed.dequantized()
    # 4 bits with a scale per 128 inputs: about 12% of the weights' size, but no more
    assert 0.05 < (dequantized - weight).norm() / weight.norm() < 0.15
    x = torch.randn(7, shape[1], generator=generator)
    x[2, 5] = 60.0  # an outlier dimension, multiplied in float32
    out = product(packed, x)
    expected = x @ dequantized.T + bias
    assert (out - expected).norm() / expected.norm() < 0.02  # what quantizing the activations to int8 costs
    alone = product(packed, x[4:5])
    assert torch.equal(alone[0], out[4])  # rows stay independent of each other


def test_int8_vectors_are_quantized_one_scale_per_key_and_per_value():
    from types import SimpleNamespace

    from asr_specdec.native.threads import governor
    from asr_specdec.whisper.runtime.decoder import _int8_vectors

    generator = torch.Generator().manual_seed(0)
    keys = torch.randn(2, 3, 4, 32, 16, generator=generator).bfloat16()  # [batch, heads, blocks, head_dim, 16]
    values = torch.randn(2, 3, 50, 32, generator=generator)
    native = SimpleNamespace(library=kernels(), governor=governor())  # what a NativeDecoder holds
    for states, lanes, dim in ((keys, 16, 3), (values, 1, 3)):
        quantized, scales = _int8_vectors(native, states, lanes=lanes)
        if lanes > 1:  # keys: [..., dim / 4, 16, 4] of q + 128, a key's four dims together; back to [..., dim, 16]
            assert quantized.dtype == torch.uint8 and quantized.shape == (2, 3, 4, 8, 16, 4)
            quantized = (quantized.to(torch.int16) - 128).transpose(-1, -2).reshape(states.shape)
        expected_scale = states.float().abs().amax(dim=dim) / 127.0
        assert torch.allclose(scales.view(expected_scale.shape), expected_scale, rtol=1e-6)
        restored = quantized.float() * scales.view(expected_scale.shape).unsqueeze(dim)
        assert (restored - states.float()).abs().max() <= expected_scale.max() * 0.5 + 1e-6


def test_a_drafter_reading_int8_cross_attention_states_stays_close_to_bfloat16():
    model = tiny_whisper(0, layers=3)
    _, encoded = encoder_output(model, 0)
    ids = [101, 110, 4, 9, 30, 2, 77, 12]
    hidden = {}
    with torch.inference_mode():
        states = WhisperDecoderRunner(model, weights="float32").cross_attention_states(encoded)
        for cross in (torch.bfloat16, torch.int8):
            runner = WhisperDecoderRunner(model, weights="int8-vnni", kv_dtype=torch.bfloat16, cross_dtype=cross)
            hidden[cross] = runner.feed_rows(runner.new_cache(encoded, cross_states=states), [ids], [0])[0]
    difference = (hidden[torch.int8] - hidden[torch.bfloat16]).norm() / hidden[torch.bfloat16].norm()
    assert 0 < difference < 0.02


def draft_runner(embedding: torch.Tensor) -> WhisperDecoderRunner:
    model = tiny_whisper(0)
    with torch.no_grad():
        model.model.decoder.embed_tokens.weight.copy_(embedding)  # tied to the output projection
    return WhisperDecoderRunner(model, weights="int8-vnni")


def int8_scores(runner: WhisperDecoderRunner, hidden: torch.Tensor) -> torch.Tensor:
    values, scale = quantize_int8(runner.proj_out.weight.detach())
    return hidden @ (values.float() * scale[:, None]).T


def test_the_draft_choice_is_the_int8_argmax_where_the_best_token_leads():
    generator = torch.Generator().manual_seed(1)
    embedding = torch.randn(120, 64, generator=generator) + 3.0  # a large shared part, as Whisper's rows have
    runner = draft_runner(embedding)
    hidden = torch.randn(300, 64, generator=generator)
    scores = int8_scores(runner, hidden)
    top = scores.topk(2, dim=1).values
    clear = (top[:, 0] - top[:, 1]) > 0.05 * top[:, 0].abs()
    choices = runner.greedy_choices(hidden, None)
    assert clear.sum() > 150
    assert torch.equal(choices[clear], scores.argmax(dim=1)[clear])


def test_the_draft_choice_never_takes_a_forbidden_token():
    generator = torch.Generator().manual_seed(2)
    runner = draft_runner(torch.randn(120, 64, generator=generator))
    hidden = torch.randn(50, 64, generator=generator)
    favourites = int8_scores(runner, hidden).topk(3, dim=1).indices
    suppressed = torch.zeros(50, 120, dtype=torch.bool)
    suppressed.scatter_(1, favourites[:, :2], True)  # each row's two best
    choices = runner.greedy_choices(hidden, suppressed)
    assert not suppressed.gather(1, choices[:, None]).any()
    assert torch.equal(choices, favourites[:, 2])


def test_the_draft_choice_follows_the_group_rule():
    # ids from 111 on are the group (timestamps): rows whose group together outweighs the best token below
    # choose within the group even where one token below beats every single group token
    generator = torch.Generator().manual_seed(3)
    begin = 111
    embedding = torch.randn(120, 64, generator=generator)
    embedding[begin:] = embedding[begin] + 0.1 * torch.randn(120 - begin, 64, generator=generator)  # alike, as
    runner = draft_runner(embedding)  # neighbouring timestamps are
    # leaning towards the group, so that many rows are close calls between the group and the best token below
    hidden = torch.randn(400, 64, generator=generator) * 0.3 + 3 * embedding[begin] / embedding[begin].norm() ** 2
    scores = int8_scores(runner, hidden)
    group_total = scores[:, begin:].logsumexp(dim=1)
    best_below, best_group = scores[:, :begin].max(dim=1), scores[:, begin:].max(dim=1)
    forced = group_total > best_below.values
    expected = torch.where(forced | (best_group.values > best_below.values), begin + best_group.indices,
                           best_below.indices)
    clear = (group_total - best_below.values).abs() > 0.05
    choices = runner.greedy_choices(hidden, None, [begin] * 400)
    assert (forced & (best_group.values < best_below.values) & clear).sum() > 5  # the rule decided those
    assert torch.equal(choices[clear], expected[clear])
