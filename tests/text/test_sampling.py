"""Sampling through the causal-LM adapter: speculative sampling draws the first two tokens from exactly the main
model's joint distribution (chi-square and total-variation bounds, against an exact table computed from the
model), whatever the drafter; a fixed seed reproduces the output."""

from __future__ import annotations

import math

import pytest
import torch

from asr_specdec.text import SpeculativeLM

from ..tiny_text import one_thread, tiny_gpt2, tiny_llama  # noqa: F401 (an autouse fixture)

VOCAB = 5
PROMPT = [0, 3, 0]
TRIALS = 2000


# spread-out distributions (25 of the 25 pairs above 2%) that differ between the two (total variation 0.4)
MAIN = tiny_llama(0, vocab=VOCAB, layers=1, positions=16, init=0.1)
ASSISTANT = tiny_llama(1, vocab=VOCAB, layers=1, positions=16, init=0.1)


def exact_joint(model, temperature: float) -> torch.Tensor:
    """p(first, second | prompt) from full forward passes, softmax at the temperature."""
    with torch.inference_mode():
        first = (model(torch.tensor([PROMPT])).logits[0, -1] / temperature).softmax(-1)
        contexts = torch.tensor([PROMPT + [token] for token in range(VOCAB)])
        second = (model(contexts).logits[:, -1] / temperature).softmax(-1)
    return first.unsqueeze(1) * second


def observed_joint(lm: SpeculativeLM, trials: int) -> torch.Tensor:
    counts = torch.zeros(VOCAB, VOCAB)
    for trial in range(trials):
        first, second = lm.generate(PROMPT, seed=trial).tokens
        counts[first, second] += 1
    return counts / trials


def chi_square_bound(degrees: int, z: float = 3.09) -> float:
    """99.9% quantile of chi-square (Wilson-Hilferty)."""
    return degrees * (1 - 2 / (9 * degrees) + z * math.sqrt(2 / (9 * degrees))) ** 3


def assert_matches(observed: torch.Tensor, expected: torch.Tensor, trials: int) -> None:
    mask = expected > 1e-4
    chi_square = float((trials * (observed[mask] - expected[mask]) ** 2 / expected[mask]).sum())
    assert chi_square < chi_square_bound(int(mask.sum()) - 1), chi_square
    assert 0.5 * float((observed - expected).abs().sum()) < 0.08  # noise alone is about 0.045 here


def test_the_test_tells_the_assistant_from_the_main_model():
    """Without the accept/reject correction the output would follow the assistant; the bound sees that."""
    assistant_alone = SpeculativeLM(ASSISTANT, "off", do_sample=True, eos_token_id=-1, max_new_tokens=2)
    observed = observed_joint(assistant_alone, TRIALS // 2)
    assert_matches(observed, exact_joint(ASSISTANT, 1.0), TRIALS // 2)
    with pytest.raises(AssertionError):
        assert_matches(observed, exact_joint(MAIN, 1.0), TRIALS // 2)


@pytest.mark.parametrize("mode, temperature", [("assistant", 1.0), ("prompt-lookup", 0.7)])
def test_speculative_sampling_keeps_the_main_distribution(mode, temperature):
    settings = {"assistant_model": ASSISTANT} if mode == "assistant" else {}
    lm = SpeculativeLM(MAIN, mode, do_sample=True, temperature=temperature, eos_token_id=-1, max_new_tokens=2,
                       num_draft_tokens=2, **settings)
    observed = observed_joint(lm, TRIALS)
    assert_matches(observed, exact_joint(MAIN, temperature), TRIALS)


def test_fixed_seed_reproduces_and_seeds_differ():
    model = tiny_gpt2(0)
    lm = SpeculativeLM(model, "assistant", assistant_model=tiny_gpt2(1), do_sample=True, top_k=20, top_p=0.9,
                       eos_token_id=-1, max_new_tokens=24, seed=7)
    first, again = lm.generate([1, 5, 9]), lm.generate([1, 5, 9])
    assert first.tokens == again.tokens and first.stats.drafted_tokens > 0
    assert lm.generate([1, 5, 9], seed=8).tokens != first.tokens
    # greedy is the limit of sampling at a vanishing temperature
    cold = lm.generate([1, 5, 9], temperature=1e-4).tokens
    assert cold == SpeculativeLM(model, "off", eos_token_id=-1, max_new_tokens=24).generate([1, 5, 9]).tokens
