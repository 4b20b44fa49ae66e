"""Universal assisted decoding between two vocabularies, on tiny models with toy tokenizers built in the test:
exact whatever the assistant proposes, and drafts that cross the vocabularies intact (a model drafting for
itself through text is always accepted)."""

from __future__ import annotations

import functools

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from asr_specdec.core.retokenize import continuation_tokens, incomplete_tail, text_after
from asr_specdec.errors import ModelError
from asr_specdec.text import SpeculativeLM

from ..tiny_text import EOS, bpe_tokenizer, char_tokenizer, one_thread, tiny_gpt2, tiny_llama  # noqa: F401 (an autouse fixture)

PROMPTS = ["the thing 12", "  two  spaces\n\tand 3.14 ", "emoji 😀 ok", "日本語 Жж é"]
CHAR, BPE = char_tokenizer(), bpe_tokenizer()


@functools.cache
def char_model(seed: int):
    return tiny_llama(seed, vocab=len(CHAR))


@functools.cache
def bpe_model(seed: int):
    return tiny_gpt2(seed, vocab=len(BPE))


def generate(main, tokenizer, prompt, **settings):
    settings = {"eos_token_id": EOS, "max_new_tokens": 30, **settings}
    return SpeculativeLM((main, tokenizer), settings.pop("mode", "off"), **settings).generate(prompt)


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("seed", range(2))
def test_universal_is_exact_in_both_directions(prompt, seed):
    pairs = ((char_model(seed), CHAR, bpe_model(seed + 5), BPE), (bpe_model(seed), BPE, char_model(seed + 5), CHAR))
    for main, main_tokenizer, assistant, assistant_tokenizer in pairs:
        expected = generate(main, main_tokenizer, prompt).tokens
        for draft_tokens, dynamic in ((1, False), (4, False), (3, True)):
            result = generate(main, main_tokenizer, prompt, mode="universal", assistant_model=assistant,
                              assistant_tokenizer=assistant_tokenizer, num_draft_tokens=draft_tokens, dynamic=dynamic)
            assert result.tokens == expected
            assert result.mode == "universal" and result.stats.new_tokens == len(expected)


@pytest.mark.parametrize("seed, prompt", [(0, PROMPTS[3]), (1, PROMPTS[0]), (1, PROMPTS[2])])
def test_a_model_drafting_for_itself_through_text_is_always_accepted(seed, prompt):
    """One token per character: text crosses without loss, so a copy of the main model drafts exactly its
    choices (cases where greedy produces no special token, which never crosses)."""
    main = char_model(seed)
    expected = generate(main, CHAR, prompt)
    assert not set(expected.tokens[:-1]) & set(CHAR.all_special_ids)
    result = generate(main, CHAR, prompt, mode="universal", assistant_model=main, assistant_tokenizer=char_tokenizer(),
                      num_draft_tokens=4, assistant_confidence_threshold=0.0)
    assert result.tokens == expected.tokens
    assert result.stats.acceptance_rate == 1.0 and result.stats.tokens_per_main_pass > 3


def test_assistant_end_of_sequence_becomes_the_main_one():
    """With end ids placed where greedy emits them, the assistant's end token arrives inside drafts."""
    main = char_model(1)
    tokens = generate(main, CHAR, PROMPTS[0], eos_token_id=-1).tokens
    end = tokens[len(tokens) // 2]
    expected = generate(main, CHAR, PROMPTS[0], eos_token_id=end).tokens
    main.generation_config.eos_token_id = end  # what the drafter reads as the assistant's end id
    try:
        result = generate(main, CHAR, PROMPTS[0], eos_token_id=end, mode="universal", assistant_model=main,
                          assistant_tokenizer=char_tokenizer(), num_draft_tokens=8, assistant_confidence_threshold=0.0)
    finally:
        main.generation_config.eos_token_id = EOS
    assert result.tokens == expected and expected[-1] == end
    assert result.stats.token_from_draft[-1], "the end token was drafted, not supplied by the main model"


def test_transformers_arguments_choose_universal_and_refuse_missing_tokenizers():
    main, assistant = char_model(0), bpe_model(0)
    lm = SpeculativeLM(main, tokenizer=CHAR, assistant_model=assistant, assistant_tokenizer=BPE)
    assert lm.mode == "universal"
    with pytest.raises(ModelError, match="assistant_tokenizer"):
        SpeculativeLM(main, tokenizer=CHAR, assistant_model=assistant)
    with pytest.raises(ModelError, match="mode 'universal'"):
        SpeculativeLM(main, "assistant", tokenizer=CHAR, assistant_model=assistant, assistant_tokenizer=BPE)


def test_continuation_refuses_a_boundary_the_tokenizer_merges_across():
    tokens = BPE.encode("on t", add_special_tokens=False)
    assert continuation_tokens(BPE, tokens, "on t", "he end") is None  # "t" + "he" re-encodes as "the"
    follow = continuation_tokens(BPE, tokens, "on t", "ok")
    assert BPE.decode(tokens + follow) == "on tok"


def test_split_characters_are_left_out_until_complete():
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    raw = Tokenizer(models.BPE({symbol: index for index, symbol in enumerate(sorted(alphabet))}, []))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw)
    tokens = tokenizer.encode("ok 😀", add_special_tokens=False)
    assert len(tokens) == 3 + 4  # the emoji is four byte tokens
    for cut in range(1, 4):
        assert incomplete_tail(tokenizer, tokens[: 3 + cut]) == cut
        assert text_after(tokenizer, tokens[:3], tokens[3: 3 + cut]) == ""
    assert incomplete_tail(tokenizer, tokens) == 0
    assert text_after(tokenizer, tokens[:3], tokens[3:]) == "😀"
    # a draft that spells the character whole continues the main model's first bytes of it
    exclamation = tokenizer.encode("!", add_special_tokens=False)
    assert continuation_tokens(tokenizer, tokens[:5], "ok ", "😀!") == tokens[5:] + exclamation
