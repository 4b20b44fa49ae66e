"""The core invariant on the real offline text models: every drafter returns exactly SmolLM2's greedy tokens,
our plain loop returns exactly transformers' generate() tokens, and universal decoding between SmolLM2 and
Gemma 3 (two real tokenizers) returns exactly the main model's greedy tokens on text where re-tokenisation
is hard. Gemma 3 is converted and loaded once, for the universal tests only."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from asr_specdec.text import SpeculativeLM
from asr_specdec.weights.text_models import load_causal_lm

from ..tiny_text import one_thread  # noqa: F401 (an autouse fixture: on a busy 2-core machine, 2 threads ran 3-4x slower)

pytestmark = pytest.mark.slow

QUOTE = (Path(__file__).resolve().parents[2] / "samples" / "prompts" / "quote_passage.txt").read_text()
SMOLLM_PROMPTS = {"quote": (QUOTE, False), "chat": ("Name three uses of copper.", True)}
# each one mixes whitespace runs, digits, emoji (some split across byte tokens) and non-Latin scripts
HARD_PROMPTS = ["Prices:  3.50 € and 12,000 ¥ — 😀👍🏽\n\tNext line:", "日本語の文章とРусский текст: 1 2 3 🚀 and then"]
NEW_TOKENS = 16


@pytest.fixture(scope="module")
def smollm(pack_cache):
    return load_causal_lm("smollm2-135m")


@pytest.fixture(scope="module")
def gemma(pack_cache):
    return load_causal_lm("gemma3-270m")


@pytest.fixture(scope="module")
def smollm_plain(smollm):
    lm = SpeculativeLM(smollm, "off", max_new_tokens=NEW_TOKENS)
    return {name: lm.generate(prompt, chat=chat) for name, (prompt, chat) in SMOLLM_PROMPTS.items()}


def test_plain_matches_transformers_generate(smollm, smollm_plain):
    prompt = smollm_plain["quote"].prompt_tokens
    with torch.inference_mode():
        ids = torch.tensor([prompt])
        reference = smollm.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                          max_new_tokens=NEW_TOKENS, pad_token_id=smollm.tokenizer.eos_token_id)
    assert smollm_plain["quote"].tokens == reference[0, len(prompt):].tolist()


@pytest.mark.parametrize("mode, settings", [
    ("prompt-lookup", {"prompt_lookup_num_tokens": 10}),
    ("quantized-self", {}),
    ("early-exit", {"assistant_early_exit": 4, "num_draft_tokens": 2}),
])
def test_every_drafter_is_exact_on_smollm2(smollm, smollm_plain, mode, settings):
    lm = SpeculativeLM(smollm, mode, max_new_tokens=NEW_TOKENS, **settings)
    for name, (prompt, chat) in SMOLLM_PROMPTS.items():
        result = lm.generate(prompt, chat=chat)
        assert result.tokens == smollm_plain[name].tokens, name
        assert result.stats.drafted_tokens > 0
    if mode == "prompt-lookup":  # the copy prompt is what prompt lookup is for
        assert lm.generate(QUOTE).stats.tokens_per_main_pass > 3


@pytest.mark.parametrize("direction, prompts", [("gemma-main", HARD_PROMPTS), ("smollm-main", HARD_PROMPTS[1:])])
def test_universal_between_two_real_tokenizers(smollm, gemma, direction, prompts):
    main, assistant = (gemma, smollm) if direction == "gemma-main" else (smollm, gemma)
    plain = SpeculativeLM(main, "off", max_new_tokens=NEW_TOKENS)
    # transformers' spelling: an assistant with another tokenizer, both tokenizers given
    universal = SpeculativeLM(main.model, tokenizer=main.tokenizer, assistant_model=assistant.model,
                              assistant_tokenizer=assistant.tokenizer, num_assistant_tokens=4,
                              max_new_tokens=NEW_TOKENS)
    assert universal.mode == "universal"
    for prompt in prompts:
        expected = plain.generate(prompt)
        result = universal.generate(prompt)
        assert result.tokens == expected.tokens, prompt
        assert result.stats.accepted_tokens > 0, "drafts crossed the vocabularies"
