"""verify.py on hand-made probability tables: greedy prefix logic, and rejection sampling that
reproduces the main model's distribution exactly (total-variation and chi-square bounds)."""

from __future__ import annotations

import math

import pytest
import torch

from asr_specdec.core.logits import LogitRules, Sampling
from asr_specdec.core.verify import verify_greedy, verify_sampling


def one_hot_logits(choices, vocab=6):
    logits = torch.zeros(len(choices), vocab)
    for row, token in enumerate(choices):
        logits[row, token] = 5.0
    return logits


@pytest.mark.parametrize("draft, main, expected", [
    ([1, 2, 3], [1, 2, 3, 4], (3, 4)),   # all accepted, bonus token
    ([1, 2, 3], [1, 5, 3, 4], (1, 5)),   # mismatch at the second token: main's own token replaces it
    ([0, 2], [1, 2, 0], (0, 1)),         # first token wrong
    ([], [4], (0, 4)),                   # no draft = a plain step
])
def test_greedy_prefix(draft, main, expected):
    assert verify_greedy(draft, one_hot_logits(main)) == expected


P = torch.tensor([[0.5, 0.2, 0.15, 0.1, 0.05, 0.0],
                  [0.1, 0.1, 0.4, 0.2, 0.1, 0.1],
                  [0.3, 0.3, 0.1, 0.1, 0.1, 0.1]])
Q = torch.tensor([[0.1, 0.5, 0.1, 0.1, 0.1, 0.1],
                  [0.3, 0.1, 0.1, 0.3, 0.1, 0.1]])


def sample_two_tokens(draft_probs, trials, seed, deterministic_draft=None):
    """Draws (first, second) output tokens through draft + verify + continuation, as the engine does."""
    generator = torch.Generator().manual_seed(seed)
    counts = torch.zeros(6, 6)
    for _ in range(trials):
        if deterministic_draft is not None:
            draft = list(deterministic_draft)
            accepted, token = verify_sampling(draft, None, P, generator)
        else:
            draft = [int(torch.multinomial(draft_probs[i], 1, generator=generator)) for i in range(2)]
            accepted, token = verify_sampling(draft, draft_probs, P, generator)
        output = draft[:accepted] + [token]
        if len(output) == 1:  # the continuation would come from the main model at the next position
            output.append(int(torch.multinomial(P[1], 1, generator=generator)))
        counts[output[0], output[1]] += 1
    return counts / trials


def expected_joint():
    # the first token from P[0]; the second from P[1] (these tables do not depend on the first token)
    return P[0].unsqueeze(1) * P[1].unsqueeze(0)


@pytest.mark.parametrize("case", ["model-draft", "deterministic-draft", "identical-draft"])
def test_rejection_sampling_preserves_main_distribution(case):
    trials = 20000
    if case == "model-draft":
        observed = sample_two_tokens(Q, trials, seed=1)
    elif case == "deterministic-draft":
        observed = sample_two_tokens(None, trials, seed=2, deterministic_draft=[1, 3])
    else:
        observed = sample_two_tokens(P[:2], trials, seed=3)
    expected = expected_joint()
    total_variation = 0.5 * float((observed - expected).abs().sum())
    assert total_variation < 0.025, total_variation
    mask = expected > 0
    chi_square = float((trials * (observed[mask] - expected[mask]) ** 2 / expected[mask]).sum())
    degrees = int(mask.sum()) - 1
    # 99.9% quantile of chi-square, Wilson-Hilferty approximation
    z = 3.09
    bound = degrees * (1 - 2 / (9 * degrees) + z * math.sqrt(2 / (9 * degrees))) ** 3
    assert chi_square < bound, (chi_square, bound)
    assert float(observed[5].sum()) == 0.0  # a token the main model never emits is never output


def test_sampling_would_fail_without_the_residual():
    """The statistical test is sharp enough to catch a wrong verifier (resampling from p, not max(0,p-q))."""
    generator = torch.Generator().manual_seed(4)
    counts = torch.zeros(6)
    trials = 20000
    for _ in range(trials):
        token = int(torch.multinomial(Q[0], 1, generator=generator))
        if torch.rand((), generator=generator) < min(1.0, float(P[0, token] / Q[0, token])):
            counts[token] += 1
        else:
            counts[int(torch.multinomial(P[0], 1, generator=generator))] += 1
    assert 0.5 * float((counts / trials - P[0]).abs().sum()) > 0.05


def test_sampling_warps_temperature_top_k_top_p():
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0]])
    probs = Sampling(do_sample=True, temperature=0.5).probabilities(logits)
    assert torch.allclose(probs, (logits / 0.5).softmax(-1))
    top_k = Sampling(do_sample=True, top_k=2).probabilities(logits)
    assert (top_k[0, 2:] == 0).all() and torch.isclose(top_k.sum(), torch.tensor(1.0))
    top_p = Sampling(do_sample=True, top_p=0.7).probabilities(logits)
    assert top_p[0, 0] > 0 and top_p[0, 1] > 0 and (top_p[0, 2:] == 0).all()
    with pytest.raises(ValueError):
        Sampling(do_sample=True, temperature=0)


def test_rules_suppress_everywhere_and_at_begin_only():
    rules = LogitRules(suppress_tokens=(1,), begin_suppress_tokens=(2,), begin_index=4)
    logits = torch.zeros(3, 5)
    applied = rules.apply(logits, first_index=3)  # rows predict indices 3, 4, 5
    assert torch.isinf(applied[:, 1]).all()
    assert torch.isinf(applied[1, 2]) and not torch.isinf(applied[0, 2]) and not torch.isinf(applied[2, 2])
    assert not torch.isinf(logits).any()  # input untouched
