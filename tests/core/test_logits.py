"""The repetition rules of core/logits.py with CTranslate2's semantics (faster-whisper's `repetition_penalty` and
`no_repeat_ngram_size`): which tokens they read (what the row generated, not the prompt), how the penalty
changes a logit, which tokens the n-gram ban forbids; a verification block ruled at once equals its rows ruled
one at a time; and on a model whose scores are set by hand, greedy decoding changes the way CTranslate2's does."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from asr_specdec.core.engine import GenerationSettings, generate_batch
from asr_specdec.core.logits import LogitRules, greedy_by_mask

from .test_beam import EOS, VOCAB, TableTarget


def ctranslate2_penalty(logits: torch.Tensor, generated: list[int], penalty: float) -> torch.Tensor:
    """CTranslate2's RepetitionPenalty for one row, written out: every id the row generated, read once from the
    logits before any change, divided by the penalty when positive (zero included), multiplied when negative."""
    out, factor = logits.clone(), np.float32(penalty)  # in the logits' float32, as CTranslate2 casts the penalty
    for token in generated:
        score = logits[token].numpy()
        out[token] = float(score * factor if score < 0 else score / factor)
    return out


def ctranslate2_ngram_ban(generated: list[int], size: int) -> set[int]:
    """CTranslate2's NoRepeatNgram for one row, as a set over every n-gram the row holds: the last token of each
    n-gram whose first n - 1 tokens are the row's last n - 1 (nothing while the row is shorter than n)."""
    if len(generated) < size:
        return set()
    tail = tuple(generated[len(generated) - (size - 1):]) if size > 1 else ()
    grams = {tuple(generated[start:start + size]) for start in range(len(generated) - size + 1)}
    return {gram[-1] for gram in grams if gram[:-1] == tail}


def test_penalty_divides_positive_and_multiplies_negative_logits_of_generated_tokens_only():
    rules = LogitRules(begin_index=2, repetition_penalty=2.0)
    logits = torch.tensor([[3.0, -1.0, 0.0, 4.0, -2.0, 6.0]])
    # prompt [5, 4]; generated 1, 3, 1, 2: the prompt's tokens stay, a repeat is penalised once
    scores = rules.apply(logits, 6, [5, 4, 1, 3, 1, 2])
    assert scores.tolist() == [[3.0, -2.0, 0.0, 2.0, -2.0, 6.0]]
    assert rules.apply(logits, 2, [5, 4]).tolist() == logits.tolist()  # the first generated token: no history
    below_one = LogitRules(begin_index=0, repetition_penalty=0.5).apply(logits, 2, [3, 4])
    assert below_one.tolist() == [[3.0, -1.0, 0.0, 8.0, -1.0, 6.0]]  # < 1 encourages repeats


def test_ngram_ban_forbids_completing_an_ngram_the_row_already_holds():
    rules = LogitRules(begin_index=1, no_repeat_ngram_size=2)
    logits = torch.zeros(1, 6)
    # generated 1 2 3 1: the last token 1 was followed by 2 before, so 2 is banned; the prompt's 0 plays no part
    banned = rules.apply(logits, 5, [0, 1, 2, 3, 1]).isinf()[0].nonzero().flatten().tolist()
    assert banned == [2]
    assert LogitRules(begin_index=1, no_repeat_ngram_size=3).apply(logits, 5, [0, 1, 2, 3, 1]).isinf().sum() == 0
    every = LogitRules(begin_index=1, no_repeat_ngram_size=1).apply(logits, 4, [0, 4, 1, 4])
    assert every.isinf()[0].nonzero().flatten().tolist() == [1, 4]  # n = 1: no token twice


@pytest.mark.parametrize("seed", range(4))
def test_rules_equal_ctranslate2s_on_random_rows_and_a_block_equals_its_rows(seed):
    rng = random.Random(seed)
    vocab = 7
    for _ in range(30):
        prompt = [rng.randrange(vocab) for _ in range(rng.randrange(1, 4))]
        generated = [rng.randrange(vocab) for _ in range(rng.randrange(0, 12))]
        penalty, size = rng.choice([0.7, 1.0, 1.3, 2.5]), rng.randrange(0, 4)
        rules = LogitRules(suppress_tokens=(6,), begin_index=len(prompt), repetition_penalty=penalty,
                           no_repeat_ngram_size=size)
        tokens = prompt + generated
        block = torch.randn(len(generated) + 1, vocab, generator=torch.Generator().manual_seed(rng.randrange(999)))
        ruled = rules.apply(block, len(prompt), tokens)
        for row in range(len(generated) + 1):
            history = generated[:row]
            expected = ctranslate2_penalty(block[row], history, penalty)
            expected[6] = -float("inf")
            for token in ctranslate2_ngram_ban(history, size) if size else ():
                expected[token] = -float("inf")
            assert torch.equal(ruled[row], expected), (row, history, penalty, size)
            alone = rules.apply(block[row:row + 1], len(prompt) + row, tokens[:len(prompt) + row])
            assert torch.equal(alone[0], ruled[row])
            mask = rules.greedy_mask(len(prompt) + row, 1, vocab, "cpu", tokens)
            assert torch.equal(mask[0], expected.isinf())


def test_greedy_choices_by_mask_only_without_the_penalty():
    assert greedy_by_mask(LogitRules(no_repeat_ngram_size=3))  # a ban is a mask: the certified argmax may pick
    assert not greedy_by_mask(LogitRules(repetition_penalty=1.2))  # a penalty changes values: full logits
    with pytest.raises(ValueError, match="pass tokens"):
        LogitRules(no_repeat_ngram_size=2).apply(torch.zeros(1, 4), 0)
    for bad in ({"repetition_penalty": 0.0}, {"repetition_penalty": -1.0}, {"no_repeat_ngram_size": -1},
                {"no_repeat_ngram_size": 1.5}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            LogitRules(**bad)


def looping_model(sequence: list[int]) -> torch.Tensor:
    """A model that loves to loop: after 1 comes 2 (logit 5) before 3 (4); after anything else 1 (3) before 4
    (2); every other id -5. The prompt is [0, 1]: its 1 is not something the row generated."""
    logits = torch.full((VOCAB,), -5.0)
    if sequence[-1] == 1:
        logits[2], logits[3] = 5.0, 4.0
    else:
        logits[1], logits[4] = 3.0, 2.0
    return logits


def greedy(rules: LogitRules, limit: int = 8) -> list[int]:
    settings = GenerationSettings(eos_token_id=EOS, max_new_tokens=limit, rules=rules)
    return generate_batch(TableTarget(looping_model, 1), [[0, 1]], settings)[0][0]


def test_each_option_changes_greedy_decoding_as_ctranslate2s_does():
    assert greedy(LogitRules(begin_index=2)) == [2, 1, 2, 1, 2, 1, 2, 1]
    # no bigram twice: (2, 1) is made, so after the second 2 comes 4; (1, 2) is made, so after the third 1 comes 3;
    # after the fourth 1 both 2 and 3 are banned: the best left is a -5 (the lowest id among them, 0)
    assert greedy(LogitRules(begin_index=2, no_repeat_ngram_size=2)) == [2, 1, 2, 4, 1, 3, 1, 0]
    # penalty 1.3: the prompt's 1 is no repeat, so 2 comes first; after a generated 1, 2 (5 / 1.3 = 3.8) loses to
    # 3 (4); once 3 was generated too (3.1), 2 wins again; 1 (3 / 1.3 = 2.3) always beats 4 (2)
    assert greedy(LogitRules(begin_index=2, repetition_penalty=1.3)) == [2, 1, 3, 1, 2, 1, 2, 1]
    # penalty 2: 1 (1.5) now loses to 4 (2) until 4 was generated too (1.0)
    assert greedy(LogitRules(begin_index=2, repetition_penalty=2.0)) == [2, 1, 3, 4, 1, 2, 1, 2]
