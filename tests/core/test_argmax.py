"""The certified greedy choice equals the argmax of the full float32 product, including where the bfloat16
approximation alone would pick the wrong token."""

from __future__ import annotations

import pytest
import torch

from asr_specdec.core.argmax import CertifiedArgmax


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("rows", [1, 9, 40])
def test_equals_full_argmax(seed, rows):
    generator = torch.Generator().manual_seed(seed)
    weight = torch.randn(5000, 64, generator=generator) * 0.1
    hidden = torch.randn(rows, 64, generator=generator) * 20
    suppressed = torch.rand(rows, 5000, generator=generator) < 0.01
    expected = (hidden @ weight.T).masked_fill(suppressed, -float("inf")).argmax(dim=1)
    assert torch.equal(CertifiedArgmax(weight)(hidden, suppressed), expected)


def test_close_rivals_are_settled_in_float32():
    # tokens 3 and 7 lead every other token by far and each other by 1e-3, which bfloat16 scores (about 8
    # significant bits of a score near 40) cannot resolve: the approximation alone picks wrong at times
    generator = torch.Generator().manual_seed(0)
    certified_right = low_precision_wrong = 0
    for _ in range(100):
        weight = torch.randn(1000, 32, generator=generator) * 0.1
        hidden = torch.randn(32, generator=generator)
        direction = hidden / hidden.norm() ** 2
        weight[3] += 40 * direction
        weight[7] = weight[3] + 1e-3 * direction  # score of 7 = score of 3 + 1e-3
        exact = int((weight @ hidden).argmax())
        assert exact == 7
        certified_right += int(CertifiedArgmax(weight)(hidden[None], None)[0]) == 7
        low_precision_wrong += int((weight.bfloat16() @ hidden.bfloat16()).float().argmax()) != 7
    assert certified_right == 100
    assert low_precision_wrong > 0


def test_ties_go_to_the_lowest_id_as_torch_argmax():
    weight = torch.zeros(10, 4)
    weight[2] = weight[6] = torch.tensor([1.0, 0, 0, 0])
    hidden = torch.tensor([[3.0, 1.0, 0, 0]])
    assert int(CertifiedArgmax(weight)(hidden, None)[0]) == 2
    suppressed = torch.zeros(1, 10, dtype=torch.bool)
    suppressed[0, 2] = True
    assert int(CertifiedArgmax(weight)(hidden, suppressed)[0]) == 6
