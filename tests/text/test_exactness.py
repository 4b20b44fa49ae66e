"""The core invariant through the causal-LM adapter, on tiny random Llama-, GPT-2- and Gemma-3-style models:
greedy speculative tokens == plain greedy tokens == transformers' own uncached forward, for every
same-vocabulary drafter, draft length, the dynamic schedule, end-of-sequence inside drafts and length limits."""

from __future__ import annotations

import functools

import pytest
import torch
from torch import nn

from asr_specdec.text import SpeculativeLM
from asr_specdec.text.drafters.early_exit import TextEarlyExitDrafter
from asr_specdec.text.drafters.quantized_self import quantize_causal_lm
from asr_specdec.text.target import CausalLMTarget, RowBlockedHead

from ..tiny_text import ARCHITECTURES, POSITIONS, one_thread, reference_greedy, top2_gaps  # noqa: F401 (an autouse fixture)

PROMPT = [1, 5, 9, 17, 5, 9, 23]
MAX_NEW = 30
SEEDS = range(3)
MODES = {
    "assistant-other": lambda architecture, seed: {"mode": "assistant",
                                                   "assistant_model": main_model(architecture, seed + 10)},
    "assistant-self": lambda architecture, seed: {"mode": "assistant",
                                                  "assistant_model": main_model(architecture, seed)},
    "quantized-self": lambda architecture, seed: {"mode": "quantized-self"},
    "early-exit": lambda architecture, seed: {"mode": "early-exit", "assistant_early_exit": 1},
    "prompt-lookup": lambda architecture, seed: {"mode": "prompt-lookup"},
}


@functools.cache
def main_model(architecture: str, seed: int):
    return ARCHITECTURES[architecture](seed)


@functools.cache
def plain(architecture: str, seed: int, eos: int = -1, max_new_tokens: int = MAX_NEW, prompt=tuple(PROMPT)):
    lm = SpeculativeLM(main_model(architecture, seed), "off", eos_token_id=eos, max_new_tokens=max_new_tokens)
    return lm.generate(list(prompt)).tokens


def speculative(architecture, seed, mode, **settings):
    model = main_model(architecture, seed)
    arguments = MODES[mode](architecture, seed)
    arguments.setdefault("eos_token_id", -1)
    arguments.setdefault("assistant_confidence_threshold", 0.0)  # full-length drafts, into ends and limits
    arguments.setdefault("max_new_tokens", MAX_NEW)
    arguments.update(settings)
    prompt = arguments.pop("prompt", PROMPT)
    return SpeculativeLM(model, **arguments).generate(list(prompt))


def assert_same(architecture, seed, expected, result):
    """Equal tokens, or the first difference is a true near-tie of the main model's logits."""
    if result.tokens != expected:
        first = next(i for i, (a, b) in enumerate(zip(expected, result.tokens)) if a != b)
        gap = top2_gaps(main_model(architecture, seed), PROMPT, expected)[first]
        pytest.fail(f"token {first} differs: {expected[first]} vs {result.tokens[first]}; top-2 logit gap {gap:.2e}")


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("seed", SEEDS)
def test_plain_matches_transformers_uncached_forward(architecture, seed):
    expected = reference_greedy(main_model(architecture, seed), PROMPT, MAX_NEW)
    assert plain(architecture, seed) == expected
    assert len(set(expected)) > 3, "a degenerate model would not test much"


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", SEEDS)
def test_greedy_speculative_equals_plain(architecture, mode, seed):
    expected = plain(architecture, seed)
    for draft_tokens in (1, 3, 8):
        result = speculative(architecture, seed, mode, num_draft_tokens=draft_tokens)
        assert_same(architecture, seed, expected, result)
        stats = result.stats
        assert stats.new_tokens == len(expected) == len(stats.token_from_draft)
        assert sum(stats.token_from_draft) == stats.accepted_tokens <= stats.drafted_tokens
        assert stats.main_passes == len(expected) - stats.accepted_tokens


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("mode", MODES)
def test_exact_with_dynamic_length_and_end_of_sequence_inside_drafts(architecture, mode):
    seed = 1
    eos = plain(architecture, seed)[MAX_NEW // 3]  # a token greedy emits a third of the way in
    expected = plain(architecture, seed, eos)
    assert expected[-1] == eos and len(expected) < MAX_NEW
    for dynamic, draft_tokens in ((True, 2), (False, 6), (False, 16)):
        result = speculative(architecture, seed, mode, eos_token_id=eos, dynamic=dynamic, num_draft_tokens=draft_tokens)
        assert_same(architecture, seed, expected, result)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_exact_at_length_limits(architecture):
    for max_new_tokens in (1, 2, 7):
        expected = plain(architecture, 2, max_new_tokens=max_new_tokens)
        assert len(expected) == max_new_tokens
        for mode in MODES:
            result = speculative(architecture, 2, mode, max_new_tokens=max_new_tokens, num_draft_tokens=8)
            assert result.tokens == expected, (mode, max_new_tokens)
    # the model's context ends generation: every position up to the last is used, never one more
    long_prompt = tuple(PROMPT * 8)
    expected = plain(architecture, 2, max_new_tokens=500, prompt=long_prompt)
    assert len(long_prompt) + len(expected) == POSITIONS
    for mode in MODES:
        result = speculative(architecture, 2, mode, max_new_tokens=500, num_draft_tokens=8, prompt=long_prompt)
        assert result.tokens == expected, mode


def test_several_end_of_sequence_ids():
    """Generation stops at whichever end id comes first, also when a draft ran past it."""
    tokens = plain("llama", 0)
    first_seen = {}
    for index, token in enumerate(tokens):
        first_seen.setdefault(token, index)
    firsts = sorted((index, token) for token, index in first_seen.items() if index >= 5)
    (stop, other_end), (_, first_end) = firsts[0], firsts[-1]  # the engine's own end id is the later one
    expected = tokens[: stop + 1]
    for mode in MODES:
        result = speculative("llama", 0, mode, eos_token_id=[first_end, other_end], num_draft_tokens=8)
        assert result.tokens == expected, mode
        assert result.stats.new_tokens == len(result.stats.token_from_draft) == len(expected)


def test_acceptance_extremes():
    same = speculative("llama", 0, "assistant-self", num_draft_tokens=4).stats
    other = speculative("llama", 0, "assistant-other", num_draft_tokens=4).stats
    assert same.acceptance_rate == 1.0 and same.tokens_per_main_pass > 4
    assert other.acceptance_rate < 0.3


def test_confidence_threshold_shortens_drafts_and_stays_exact():
    result = speculative("gpt2", 0, "assistant-other", num_draft_tokens=8, assistant_confidence_threshold=0.9)
    assert result.tokens == plain("gpt2", 0)
    assert result.stats.drafted_tokens < 8 * result.stats.main_passes


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_early_exit_view_shares_weights_and_leaves_the_model_whole(architecture):
    model = main_model(architecture, 0)
    layers_before = sum(1 for _ in model.parameters())
    drafter = TextEarlyExitDrafter(model, 1)
    shared = {id(parameter) for parameter in model.parameters()}
    assert all(id(parameter) in shared for parameter in drafter.model.parameters())
    assert sum(1 for _ in model.parameters()) == layers_before
    assert plain(architecture, 0) == reference_greedy(model, PROMPT, MAX_NEW)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_int8_copy_shares_embeddings_and_leaves_the_model_whole(architecture):
    model = main_model(architecture, 0)
    before = {name: value.clone() for name, value in model.state_dict().items()}
    quantized = quantize_causal_lm(model)
    assert quantized.get_input_embeddings().weight is model.get_input_embeddings().weight
    assert type(quantized.lm_head) is not nn.Linear and type(model.lm_head) is nn.Linear
    assert all(torch.equal(before[name], value) for name, value in model.state_dict().items())


def test_target_rolls_back_and_refuses_gaps():
    model = main_model("gemma3", 0)  # sliding-window layers keep every position, so any rollback is possible
    target = CausalLMTarget(model)
    first = target.extend(PROMPT + [3, 4, 5, 6, 7, 8], 0)
    again = target.extend([3, 4, 5, 6, 7, 8], len(PROMPT))  # overwrite the last six positions
    assert (first[-6:] - again).abs().max() < 1e-5
    with pytest.raises(ValueError, match="holds only"):
        target.extend([1], len(PROMPT) + 7)
    with pytest.raises(ValueError, match="exceed"):
        target.extend([1] * POSITIONS, 1)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_verification_projects_rows_in_blocks_and_puts_the_head_back(architecture, monkeypatch):
    model = main_model(architecture, 0)
    head = model.get_output_embeddings()
    calls = []
    forward = RowBlockedHead.forward

    def counted(self, hidden):
        calls.append(hidden.shape)
        return forward(self, hidden)

    monkeypatch.setattr(RowBlockedHead, "forward", counted)
    target = CausalLMTarget(model)
    sequence = PROMPT + [3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    logits = target.extend(sequence, 0, scored=11)
    with torch.inference_mode():
        expected = model(torch.tensor([sequence])).logits[0, -11:]
    assert (logits - expected).abs().max() < 1e-4
    assert calls == [torch.Size([1, 11, head.weight.shape[1]])]
    target.extend([5], len(sequence), scored=1)  # one row: transformers' own call
    assert len(calls) == 1 and model.get_output_embeddings() is head
