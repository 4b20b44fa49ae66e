"""The encoder's self-attention kernels, bfloat16 and float32, against PyTorch's float32 attention over the same
inputs, at lengths whose last block of keys is full, partial, or holds fewer than one vector of keys."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from asr_specdec.native import capabilities, kernels

pytestmark = pytest.mark.skipif(not capabilities().encoder_attention, reason="no native kernels here")


@pytest.mark.parametrize("length", [1, 16, 17, 37, 64, 300])
@pytest.mark.parametrize("threads", [1, 2])
def test_bfloat16_attention_matches_float32_attention(length, threads):
    heads, head_dim = 4, 64
    generator = torch.Generator().manual_seed(length)
    qkv = (2 * torch.randn(length, 3 * heads * head_dim, generator=generator)).bfloat16()
    out = torch.full((length, heads * head_dim), float("nan"), dtype=torch.bfloat16)
    padded = -(-length // 32) * 32
    scratch = torch.empty(threads * 2 * padded * head_dim, dtype=torch.bfloat16)
    scaling = head_dim ** -0.5
    assert kernels().encoder_attention_bf16(qkv.data_ptr(), length, heads, head_dim, scaling, out.data_ptr(),
                                            scratch.data_ptr(), threads) == 0

    query, key, value = qkv.float().view(1, length, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    expected = F.scaled_dot_product_attention((query * scaling).bfloat16().float(), key, value, scale=1.0)
    expected = expected.transpose(1, 2).reshape(length, heads * head_dim)
    error = (out.float() - expected).abs()
    assert error.max() < 0.06 and error.mean() < 0.004, (error.max().item(), error.mean().item())


@pytest.mark.parametrize("length", [1, 16, 17, 37, 64, 300])
@pytest.mark.parametrize("threads", [1, 2])
def test_float32_attention_matches_pytorchs_and_is_the_same_on_any_thread_count(length, threads):
    heads, head_dim = 4, 64
    generator = torch.Generator().manual_seed(length)
    qkv = 2 * torch.randn(length, 3 * heads * head_dim, generator=generator)
    padded = -(-length // 32) * 32
    outputs = []
    for count in (threads, 3 - threads):
        out = torch.full((length, heads * head_dim), float("nan"))
        scratch = torch.empty(count * 2 * padded * head_dim)
        assert kernels().encoder_attention_f32(qkv.data_ptr(), length, heads, head_dim, head_dim ** -0.5, 0,
                                               out.data_ptr(), scratch.data_ptr(), count) == 0
        outputs.append(out)
    assert torch.equal(outputs[0], outputs[1])
    query, key, value = qkv.view(1, length, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    expected = F.scaled_dot_product_attention(query * head_dim ** -0.5, key, value, scale=1.0)
    expected = expected.transpose(1, 2).reshape(length, heads * head_dim)
    assert (outputs[0] - expected).abs().max() < 1e-5


def test_float32_attention_refuses_a_head_size_it_has_no_layout_for():
    qkv, out, scratch = torch.zeros(4, 3 * 48), torch.zeros(4, 48), torch.zeros(2 * 32 * 48)
    for int8 in (0, 1, 2):
        assert kernels().encoder_attention_f32(qkv.data_ptr(), 4, 1, 48, 1.0, int8, out.data_ptr(),
                                               scratch.data_ptr(), 1) == -1
    qkv, out, scratch = torch.zeros(4, 3 * 64), torch.zeros(4, 64), torch.zeros(2 * 32 * 64)
    assert kernels().encoder_attention_f32(qkv.data_ptr(), 4, 1, 64, 1.0, 3, out.data_ptr(), scratch.data_ptr(),
                                           1) == -1


def _int8_rows(rows: torch.Tensor, outliers: bool) -> torch.Tensor:
    """Each row as the kernels quantize it: its outliers (above 6x its rms, `outliers`) exact, the rest to int8 with
    the row's own scale (its largest |value| / 127), in float32 as the kernel rounds."""
    limit = 6 * rows.pow(2).mean(dim=-1, keepdim=True).sqrt() if outliers else torch.full_like(rows[..., :1], 1e30)
    kept = rows.abs() > limit
    rest = rows.masked_fill(kept, 0)
    step = rest.abs().amax(dim=-1, keepdim=True) / 127
    step = torch.where(step > 0, step, torch.ones_like(step))
    quantized = torch.round(rest * (1 / step)).clamp(-127, 127) * step
    return torch.where(kept, rows, quantized)


@pytest.mark.parametrize("length", [17, 64, 65, 300])
def test_int8_scores_are_the_products_of_int8_queries_and_keys(length):
    """With int8 scores the kernel computes attention over exactly the int8 queries (outliers kept) and keys: the
    same as float32 attention over those rounded values."""
    heads, head_dim = 4, 64
    generator = torch.Generator().manual_seed(length)
    qkv = 2 * torch.randn(length, 3 * heads * head_dim, generator=generator)
    qkv[0, 5] = 200.0  # an outlier dimension of the first query of the first head
    scaling = head_dim ** -0.5
    out = torch.full((length, heads * head_dim), float("nan"))
    scratch = torch.empty(2 * 2 * (-(-length // 32) * 32) * head_dim)
    assert kernels().encoder_attention_f32(qkv.data_ptr(), length, heads, head_dim, scaling, 1, out.data_ptr(),
                                           scratch.data_ptr(), 2) == 0
    query, key, value = qkv.view(1, length, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    rounded_query, rounded_key = _int8_rows(query * scaling, True), _int8_rows(key, False)
    expected = F.scaled_dot_product_attention(rounded_query.double(), rounded_key.double(), value.double(), scale=1.0)
    expected = expected.transpose(1, 2).reshape(length, heads * head_dim).float()
    assert (out - expected).abs().max() < 1e-4
    unrounded = F.scaled_dot_product_attention(query * scaling, key, value, scale=1.0)
    assert not torch.allclose(expected, unrounded.transpose(1, 2).reshape(length, heads * head_dim), atol=1e-4)


@pytest.mark.parametrize("length", [17, 64, 65, 300])
@pytest.mark.parametrize("head_dim", [32, 64, 96])
def test_int8_weights_times_values_are_fixed_point_weights_times_int8_values(length, head_dim):
    """With int8 == 2 the weights x values are int8 products too: each softmax weight as round(16383 e), each
    value channel to int8 with its own scale, the sum divided by the fixed-point weights' total. The kernel equals
    that computed in float64 over the rounded queries and keys (to a weight's rounding step), and not the
    int8-scores-only output; one thread and two give the same bits."""
    heads = 3
    generator = torch.Generator().manual_seed(length + head_dim)
    qkv = 2 * torch.randn(length, 3 * heads * head_dim, generator=generator)
    qkv[:, 2 * heads * head_dim + 1] *= 20  # a value channel far larger than the rest: its own scale
    scaling = head_dim ** -0.5
    outputs = {}
    for int8, threads in ((1, 2), (2, 2), (2, 1)):
        out = torch.full((length, heads * head_dim), float("nan"))
        scratch = torch.empty(threads * 2 * (-(-length // 32) * 32) * head_dim)
        assert kernels().encoder_attention_f32(qkv.data_ptr(), length, heads, head_dim, scaling, int8,
                                               out.data_ptr(), scratch.data_ptr(), threads) == 0
        outputs[int8, threads] = out
    assert torch.equal(outputs[2, 2], outputs[2, 1])
    query, key, value = qkv.view(1, length, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
    rounded_query, rounded_key = _int8_rows(query * scaling, True), _int8_rows(key, False)
    scores = rounded_query.double() @ rounded_key.double().transpose(-1, -2)
    weights = torch.round(16383 * torch.exp(scores - scores.amax(dim=-1, keepdim=True)))
    step = value.abs().amax(dim=-2, keepdim=True) / 127
    rounded_value = torch.round(value * (1 / step)) * step
    expected = (weights @ rounded_value.double()) / weights.sum(dim=-1, keepdim=True)
    expected = expected.transpose(1, 2).reshape(length, heads * head_dim).float()
    size = expected.abs().max()
    assert (outputs[2, 2] - expected).abs().max() < 1e-3 * size
    assert (outputs[1, 2] - expected).abs().max() > 2e-3 * size
