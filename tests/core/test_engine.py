"""The core invariant on tiny random Whisper models: greedy speculative tokens == plain greedy tokens,
whatever the drafter, draft length, dynamic schedule, end-of-text and length limits."""

from __future__ import annotations

import pytest
import torch

from asr_specdec.core.draft_length import DraftLength
from asr_specdec.core.drafter import DraftContext
from asr_specdec.core.engine import GenerationSettings, generate
from asr_specdec.core.logits import LogitRules, Sampling
from asr_specdec.whisper.drafters import AssistantDrafter
from asr_specdec.whisper.runtime.decoder import DecoderTarget, WhisperDecoderRunner

from ..tiny_whisper import EOS, NO_TIMESTAMPS, START, drafter_factories, encoder_output, tiny_whisper

PROMPT = [START, NO_TIMESTAMPS]
RULES = LogitRules(suppress_tokens=(3, 7), begin_suppress_tokens=(EOS, 5), begin_index=len(PROMPT))
GREEDY = Sampling()


def run(model, drafter_factory, seed, *, eos=EOS, draft_tokens=4, dynamic=False, max_new_tokens=60,
        threshold_drafter=None, rules=RULES, drafter_rules=None, sampling=GREEDY, generator=None):
    features, encoded = encoder_output(model, seed)
    runner = WhisperDecoderRunner(model)
    with torch.inference_mode():
        cross = runner.cross_attention_states(encoded)
        cache = runner.new_cache(encoded, cross_states=cross)
        settings = GenerationSettings(eos_token_id=eos, max_new_tokens=max_new_tokens, rules=rules,
                                      sampling=sampling, draft_length=DraftLength(draft_tokens, dynamic=dynamic))
        drafter = drafter_factory() if drafter_factory else None
        if drafter is not None:
            drafter.start(DraftContext(rules=drafter_rules or rules, sampling=sampling,
                                       max_positions=cache.max_positions, eos_token_id=eos, generator=generator,
                                       encoder_output=encoded, input_features=features, main_cache=cache,
                                       main_cross_states=cross))
        return generate(DecoderTarget(runner, cache), PROMPT, settings, drafter, generator)


def reference_greedy(model, seed, eos=EOS, max_new_tokens=60, rules=RULES):
    """transformers' own forward pass over the whole sequence each step (no cache), argmax after rules."""
    _, encoded = encoder_output(model, seed)
    sequence = list(PROMPT)
    with torch.inference_mode():
        while len(sequence) < len(PROMPT) + max_new_tokens:
            logits = model(encoder_outputs=(encoded,), decoder_input_ids=torch.tensor([sequence])).logits[0, -1:]
            token = int(rules.apply(logits, len(sequence), sequence).argmax())
            sequence.append(token)
            if token == eos:
                break
    return sequence[len(PROMPT):]


def eos_seen_midway(model, seed):
    """A token plain greedy emits mid-sequence, used as end-of-text so drafts run into it."""
    tokens, _ = run(model, None, seed, eos=-1)
    return tokens[len(tokens) // 3]


MAIN = tiny_whisper(0)
OTHER = tiny_whisper(1)  # same vocabulary, unrelated weights: acceptance near zero
DRAFTERS = drafter_factories(MAIN, OTHER)


@pytest.mark.parametrize("seed", range(3))
def test_plain_matches_transformers_forward(seed):
    tokens, stats = run(MAIN, None, seed)
    assert tokens == reference_greedy(MAIN, seed)
    assert stats.drafted_tokens == 0 and stats.main_passes == len(tokens)


@pytest.mark.parametrize("name", DRAFTERS)
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("draft_tokens", [1, 3, 8])
def test_greedy_speculative_equals_plain(name, seed, draft_tokens):
    plain, _ = run(MAIN, None, seed)
    speculative, stats = run(MAIN, DRAFTERS[name], seed, draft_tokens=draft_tokens)
    assert speculative == plain
    assert stats.new_tokens == len(plain)
    assert stats.accepted_tokens <= stats.drafted_tokens
    assert len(stats.token_from_draft) == len(plain)
    assert sum(stats.token_from_draft) == stats.accepted_tokens


@pytest.mark.parametrize("name", DRAFTERS)
@pytest.mark.parametrize("seed", range(3))
def test_exact_with_dynamic_length_and_end_of_text(name, seed):
    eos = eos_seen_midway(MAIN, seed)
    plain, _ = run(MAIN, None, seed, eos=eos)
    assert plain[-1] == eos and len(plain) < 60
    for dynamic, draft_tokens in ((True, 2), (False, 6)):
        speculative, _ = run(MAIN, DRAFTERS[name], seed, eos=eos, dynamic=dynamic, draft_tokens=draft_tokens)
        assert speculative == plain


@pytest.mark.parametrize("max_new_tokens", [1, 2, 7, 13])
def test_exact_at_length_limit(max_new_tokens):
    plain, _ = run(MAIN, None, 5, max_new_tokens=max_new_tokens)
    assert len(plain) == max_new_tokens
    for name in DRAFTERS:
        speculative, _ = run(MAIN, DRAFTERS[name], 5, max_new_tokens=max_new_tokens, draft_tokens=8)
        assert speculative == plain, name


def test_model_position_limit_is_respected():
    plain, _ = run(MAIN, None, 2, max_new_tokens=500)
    assert len(plain) == 64 - len(PROMPT)  # the decoder has 64 positions
    speculative, _ = run(MAIN, DRAFTERS["assistant-self"], 2, max_new_tokens=500, draft_tokens=8)
    assert speculative == plain


def test_acceptance_extremes():
    _, same = run(MAIN, DRAFTERS["assistant-self"], 0, draft_tokens=4)
    _, other = run(MAIN, DRAFTERS["assistant-other"], 0, draft_tokens=4)
    assert same.acceptance_rate == 1.0
    assert same.tokens_per_main_pass > 4
    assert other.acceptance_rate < 0.3


def test_confidence_threshold_shortens_drafts_and_stays_exact():
    plain, _ = run(MAIN, None, 1)
    speculative, stats = run(MAIN, lambda: AssistantDrafter(OTHER, MAIN, confidence_threshold=0.9), 1,
                             draft_tokens=8)
    assert speculative == plain
    assert stats.drafted_tokens < 8 * stats.main_passes


# faster-whisper's repetition rules (core/logits.py): the n-gram ban is a mask the greedy path takes without full
# logits; the penalty changes values, so every greedy choice, plain or verifying, reads the full logits
REPEATS = {
    "ngram": LogitRules(suppress_tokens=(3, 7), begin_suppress_tokens=(EOS, 5), begin_index=len(PROMPT),
                        no_repeat_ngram_size=2),
    "penalty": LogitRules(suppress_tokens=(3, 7), begin_suppress_tokens=(EOS, 5), begin_index=len(PROMPT),
                          repetition_penalty=3.0),
}


@pytest.mark.parametrize("repeat", REPEATS)
def test_repetition_rules_change_plain_decoding_as_the_reference_does(repeat):
    rules, changed = REPEATS[repeat], 0
    for seed in range(3):
        plain, _ = run(MAIN, None, seed, rules=rules)
        assert plain == reference_greedy(MAIN, seed, rules=rules)
        changed += plain != run(MAIN, None, seed)[0]
        if repeat == "ngram":
            bigrams = list(zip(plain, plain[1:]))
            assert len(bigrams) == len(set(bigrams))
    assert changed >= 2  # random weights loop: the rules have something to change


@pytest.mark.parametrize("repeat", REPEATS)
@pytest.mark.parametrize("name", DRAFTERS)
def test_greedy_speculative_equals_plain_under_repetition_rules(repeat, name):
    for seed in range(2):
        plain, _ = run(MAIN, None, seed, rules=REPEATS[repeat])
        speculative, _ = run(MAIN, DRAFTERS[name], seed, rules=REPEATS[repeat], draft_tokens=4)
        assert speculative == plain, seed


def test_a_drafter_sampling_under_the_same_repetition_rules_draws_the_main_models_distribution():
    """The model drafting for itself under the main rules proposes from the very distribution the main model
    verifies with: every draft is accepted. Drafting without the penalty, its proposals get rejected."""
    rules = LogitRules(suppress_tokens=(3, 7), begin_index=len(PROMPT), repetition_penalty=3.0,
                       no_repeat_ngram_size=3)
    sampling = Sampling(do_sample=True, temperature=0.7)

    def sampled(drafter_rules):
        generator = torch.Generator().manual_seed(0)
        return run(MAIN, DRAFTERS["assistant-self"], 0, rules=rules, drafter_rules=drafter_rules, sampling=sampling,
                   generator=generator, eos=-1, max_new_tokens=40)[1]

    same = sampled(None)
    assert same.drafted_tokens > 20 and same.acceptance_rate == 1.0
    assert sampled(RULES).acceptance_rate < 0.9
