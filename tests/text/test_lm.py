"""SpeculativeLM's public surface: transformers' argument names choose the same drafters, and bad input gives
clear errors (SpecdecError, one line) instead of tracebacks from deep inside a model."""

from __future__ import annotations

import pytest

from asr_specdec import SpeculativeLM
from asr_specdec.core.prompt_lookup import PromptLookupDrafter
from asr_specdec.errors import ModelError, SpecdecError
from asr_specdec.text.drafters.assistant import TextAssistantDrafter
from asr_specdec.text.drafters.early_exit import TextEarlyExitDrafter

from ..tiny_text import POSITIONS, char_tokenizer, one_thread, tiny_gpt2, tiny_llama  # noqa: F401 (an autouse fixture)

TOKENIZER = char_tokenizer()
MAIN = tiny_llama(0, vocab=len(TOKENIZER))
OTHER = tiny_llama(1, vocab=len(TOKENIZER))


@pytest.mark.parametrize("arguments, mode, draft_tokens, drafter_class", [
    ({"assistant_model": OTHER}, "assistant", 8, TextAssistantDrafter),
    ({"assistant_model": OTHER, "num_assistant_tokens": 3}, "assistant", 3, TextAssistantDrafter),
    ({"speculative_decoding": True, "draft_model": OTHER, "num_draft_tokens": 6}, "assistant", 6,
     TextAssistantDrafter),
    ({"speculative_decoding": False, "draft_model": OTHER}, "off", 8, type(None)),
    ({"prompt_lookup_num_tokens": 7}, "prompt-lookup", 7, PromptLookupDrafter),
    ({"assistant_early_exit": 2}, "early-exit", 8, TextEarlyExitDrafter),
    ({}, "off", 8, type(None)),
])
def test_transformers_argument_names_choose_the_drafter(arguments, mode, draft_tokens, drafter_class):
    lm = SpeculativeLM(MAIN, tokenizer=TOKENIZER, **arguments)
    assert lm.mode == mode and lm.draft_length.tokens == draft_tokens
    assert isinstance(lm.drafter, drafter_class)


def test_drafter_settings_reach_the_drafter():
    lookup = SpeculativeLM(MAIN, prompt_lookup_num_tokens=4, max_matching_ngram_size=2).drafter
    assert lookup.max_ngram_size == 2
    assert SpeculativeLM(MAIN, assistant_early_exit=2).drafter.exit_layer == 2
    assert SpeculativeLM(MAIN, assistant_model=OTHER).drafter.confidence_threshold == 0.4  # transformers' default
    assert SpeculativeLM(MAIN, "quantized-self", assistant_confidence_threshold=0).drafter.confidence_threshold == 0
    custom = PromptLookupDrafter(max_ngram_size=5)
    lm = SpeculativeLM(MAIN, custom)
    assert lm.drafter is custom and lm.mode == "prompt-lookup"


def test_result_carries_text_tokens_and_stats():
    lm = SpeculativeLM((MAIN, TOKENIZER), "assistant", assistant_model=MAIN, max_new_tokens=12, eos_token_id=-1)
    result = lm.generate("the thing")
    assert result.prompt_tokens == TOKENIZER("the thing")["input_ids"]
    assert result.text == TOKENIZER.decode(result.tokens, skip_special_tokens=True)
    assert len(result.tokens) == result.stats.new_tokens == 12
    assert result.stats.acceptance_rate == 1.0 and result.mode == "assistant"
    assert lm.generate(result.prompt_tokens).tokens == result.tokens  # token ids work as a prompt too


@pytest.mark.parametrize("prompt", ["", "   \n", []])
def test_empty_prompt(prompt):
    with pytest.raises(SpecdecError, match="empty"):
        SpeculativeLM((MAIN, TOKENIZER)).generate(prompt)


def test_prompt_longer_than_the_context():
    lm = SpeculativeLM((MAIN, TOKENIZER), "prompt-lookup")
    with pytest.raises(SpecdecError, match=f"reads at most {POSITIONS}"):
        lm.generate("a" * POSITIONS)
    assert len(lm.generate("a" * (POSITIONS - 3), max_new_tokens=50).tokens) == 2  # up to the last position


@pytest.mark.parametrize("mode", ["assistant", "universal"])
def test_modes_that_need_an_assistant(mode):
    with pytest.raises(SpecdecError, match="needs an assistant"):
        SpeculativeLM(MAIN, mode)


@pytest.mark.parametrize("layer", [0, 3, -1, 99])
def test_early_exit_layer_out_of_range(layer):
    with pytest.raises(ModelError, match=r"out of range.*choose 1\.\.2"):
        SpeculativeLM(MAIN, "early-exit", assistant_early_exit=layer)


@pytest.mark.parametrize("arguments, message", [
    ({"mode": "fast"}, "unknown mode 'fast'"),
    ({"max_new_tokens": 0}, "max_new_tokens must be at least 1"),
    ({"num_draft_tokens": 0, "mode": "prompt-lookup"}, "num_draft_tokens must be an integer >= 1"),
    ({"do_sample": True, "temperature": 0}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
])
def test_bad_settings(arguments, message):
    with pytest.raises(SpecdecError, match=message):
        SpeculativeLM(MAIN, **arguments)


def test_bad_models():
    with pytest.raises(SpecdecError, match="needs the main model's tokenizer"):
        SpeculativeLM(MAIN).generate("text without a tokenizer")
    with pytest.raises(ModelError, match="a name, a directory"):
        SpeculativeLM(42)
    with pytest.raises(ModelError, match="same tokenizer"):
        TextAssistantDrafter(tiny_gpt2(0, vocab=50), MAIN)
    with pytest.raises(ModelError, match="no such model directory"):
        SpeculativeLM("./no/such/model")
