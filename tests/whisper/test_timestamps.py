"""Whisper's timestamp rules on hand-made logits, against transformers' WhisperTimeStampLogitsProcessor, and
row by row inside a multi-row verification block."""

from __future__ import annotations

import random

import pytest
import torch
from transformers import GenerationConfig
from transformers.generation.logits_process import WhisperTimeStampLogitsProcessor

from asr_specdec.core.logits import LogitRules
from asr_specdec.whisper.runtime.timestamps import TimestampRules
from asr_specdec.whisper.runtime.tokens import WhisperTokens

EOT, NO_TIMESTAMPS, FIRST_TIMESTAMP, VOCAB = 20, 25, 26, 40  # ids 0..19 text, 26..39 timestamps <|0.00|>..<|0.26|>
PROMPT = [21, 22]
INF = float("inf")


def rules(max_initial: int | None = 3, suppress=(), begin_suppress=(), **repetition) -> TimestampRules:
    return TimestampRules(suppress, begin_suppress, begin_index=len(PROMPT), timestamp_begin=FIRST_TIMESTAMP,
                          no_timestamps=NO_TIMESTAMPS, end_of_text=EOT, max_initial_timestamp_index=max_initial,
                          **repetition)


def allowed(scores: torch.Tensor) -> set[int]:
    return set(torch.isfinite(scores).nonzero().flatten().tolist())


def one_row(generated: list[int], logits: torch.Tensor | None = None, **options) -> torch.Tensor:
    logits = text_favoured() if logits is None else logits
    return rules(**options).apply(logits, len(PROMPT) + len(generated), PROMPT + generated)[0]


def text_favoured(end_of_text: float = 0.0) -> torch.Tensor:
    """Logits where one text token outweighs all timestamps together, so no timestamp is forced."""
    logits = torch.zeros(1, VOCAB)
    logits[0, :EOT] = 4.0
    logits[0, EOT] = end_of_text
    return logits


TIMESTAMPS = set(range(FIRST_TIMESTAMP, VOCAB))
TEXT = set(range(EOT))
OTHER_SPECIALS = {21, 22, 23, 24}


def test_first_token_is_an_early_timestamp():
    assert allowed(one_row([])) == {26, 27, 28, 29}  # <|0.00|> .. max_initial_timestamp_index 3
    assert allowed(one_row([], max_initial=None)) == TIMESTAMPS


def test_a_lone_opening_timestamp_is_followed_by_text():
    assert allowed(one_row([27])) == TEXT | {EOT} | OTHER_SPECIALS


def test_text_is_closed_by_a_later_timestamp_never_an_earlier_or_equal_one():
    assert allowed(one_row([27, 5, 6])) == TEXT | {EOT} | OTHER_SPECIALS | set(range(28, VOCAB))


def test_after_a_closing_timestamp_comes_an_opening_one_or_the_end():
    likely_end = text_favoured(end_of_text=4.0)
    assert allowed(one_row([27, 5, 30], likely_end)) == {EOT} | OTHER_SPECIALS | set(range(30, VOCAB))
    # without a likely end, the timestamps left outweigh everything else: the next segment opens
    assert allowed(one_row([27, 5, 30])) == set(range(30, VOCAB))


def test_after_a_pair_comes_text():
    assert allowed(one_row([27, 5, 30, 31])) == TEXT | {EOT} | OTHER_SPECIALS
    assert allowed(one_row([27, 5, 30, 31, 8])) == TEXT | {EOT} | OTHER_SPECIALS | set(range(32, VOCAB))


def test_no_timestamps_token_is_never_allowed():
    for generated in ([], [27], [27, 5], [27, 5, 30]):
        assert not torch.isfinite(one_row(generated)[NO_TIMESTAMPS])


def test_timestamps_are_forced_when_together_likelier_than_any_text_token():
    logits = torch.zeros(1, VOCAB)
    logits[0, 3] = 2.0  # the likeliest single token is text...
    logits[0, FIRST_TIMESTAMP + 4:] = 0.5  # ...but ten timestamps at e^0.5 each outweigh it
    assert allowed(one_row([27, 5], logits)) == set(range(28, VOCAB))
    logits[0, 3] = 5.0
    assert 3 in allowed(one_row([27, 5], logits))


def test_suppression_applies_before_the_timestamp_comparison():
    logits = torch.zeros(1, VOCAB)
    logits[0, 3] = 5.0
    logits[0, FIRST_TIMESTAMP + 4:] = 0.5
    assert 3 in allowed(one_row([27, 5], logits))
    assert allowed(one_row([27, 5], logits, suppress=(3,))) == set(range(28, VOCAB))


def test_repetition_rules_apply_before_the_timestamp_comparison_as_in_ctranslate2():
    logits = torch.zeros(1, VOCAB)
    logits[0, 3] = 3.2  # the text token 3 (e^3.2 = 24.5) outweighs the timestamps allowed (2 + 10 e^0.5 = 18.5)
    logits[0, FIRST_TIMESTAMP + 4:] = 0.5
    assert 3 in allowed(one_row([27, 5], logits))
    # generated once, 3 is penalised (3.2 / 2 = 1.6) before the comparison: now a timestamp is forced
    assert allowed(one_row([27, 3, 5], logits, repetition_penalty=2.0)) == set(range(28, VOCAB))
    # the bigram (3, 5) was made: after another 3, 5 is banned; in the greedy mask too, with pairing and order
    generated = [27, 3, 5, 3]
    assert allowed(one_row(generated, no_repeat_ngram_size=2)) == TEXT - {5} | {EOT} | OTHER_SPECIALS | set(
        range(28, VOCAB))
    mask = rules(no_repeat_ngram_size=2).greedy_mask(len(PROMPT) + 4, 1, VOCAB, "cpu", PROMPT + generated)[0]
    assert set((~mask).nonzero().flatten().tolist()) == TEXT - {5} | {EOT} | OTHER_SPECIALS | set(range(28, VOCAB))


def test_rows_before_the_first_generated_token_are_left_alone():
    logits = torch.randn(3, VOCAB)
    scores = rules().apply(logits, 0, PROMPT)
    assert torch.equal(scores[:2], logits[:2])
    assert allowed(scores[2]) == {26, 27, 28, 29}


def test_tokens_are_required():
    with pytest.raises(ValueError, match="tokens"):
        rules().apply(torch.zeros(1, VOCAB), len(PROMPT))


def random_sequence(rng: random.Random, length: int) -> list[int]:
    """A rule-abiding transcript prefix, built by drawing from what the rules allow at each step."""
    generated = []
    for _ in range(length):
        logits = torch.randn(1, VOCAB, generator=torch.Generator().manual_seed(rng.randrange(10**6)))
        options = sorted(allowed(one_row(generated, logits)) - {EOT})
        generated.append(rng.choice(options))
    return generated


@pytest.mark.parametrize("seed", range(6))
def test_equals_transformers_processor_row_by_row(seed):
    rng = random.Random(seed)
    config = GenerationConfig(eos_token_id=EOT, no_timestamps_token_id=NO_TIMESTAMPS, max_initial_timestamp_index=3)
    processor = WhisperTimeStampLogitsProcessor(config, begin_index=len(PROMPT))
    ours = rules()
    for length in range(12):
        generated = random_sequence(rng, length)
        logits = torch.randn(1, VOCAB, generator=torch.Generator().manual_seed(seed * 100 + length)) * 3
        expected = processor(torch.tensor([PROMPT + generated]), logits.clone())
        actual = ours.apply(logits, len(PROMPT) + length, PROMPT + generated)
        assert torch.equal(actual, expected), generated


@pytest.mark.parametrize("seed", range(6))
def test_a_verification_block_equals_its_rows_one_at_a_time(seed):
    rng = random.Random(seed)
    sequence = PROMPT + random_sequence(rng, 14)
    first_index = len(PROMPT) + rng.randrange(6)
    logits = torch.randn(len(sequence) - first_index + 1, VOCAB, generator=torch.Generator().manual_seed(seed)) * 3
    block = rules(suppress=(4,), begin_suppress=(EOT,)).apply(logits, first_index, sequence)
    for row in range(logits.shape[0]):
        single = rules(suppress=(4,), begin_suppress=(EOT,)).apply(logits[row:row + 1], first_index + row,
                                                                  sequence[:first_index + row])
        assert torch.equal(block[row:row + 1], single), row
    assert torch.equal(logits, logits.clone())  # the input is not edited in place


def test_whisper_tokens_give_timestamp_prompts_and_rules():
    tokens = WhisperTokens(start_of_transcript=50257, end_of_text=50256, no_timestamps=50362, language_ids={},
                           task_ids={}, suppress_tokens=(1,), begin_suppress_tokens=(220,), max_positions=448,
                           vocab_size=51864, start_of_prev=50360)
    assert tokens.timestamp_begin == 50363 and tokens.timestamp_count == 1501
    assert tokens.prompt(None, "transcribe") == [50257, 50362]
    assert tokens.prompt(None, "transcribe", timestamps=True) == [50257]
    previous = list(range(300))
    prompt = tokens.prompt(None, "transcribe", timestamps=True, previous=previous)
    assert prompt == [50360, *range(300 - 223, 300), 50257]  # the last 448 // 2 - 1 previous tokens
    plain, timed = tokens.rules(2), tokens.rules(2, timestamps=True)
    assert type(plain) is LogitRules
    assert isinstance(timed, TimestampRules) and timed.timestamp_begin == 50363 and timed.begin_index == 2
    assert timed.max_initial_timestamp_index == 50


def test_a_vocabulary_without_timestamps_is_refused():
    from asr_specdec.errors import SpecdecError

    tokens = WhisperTokens(start_of_transcript=5, end_of_text=4, no_timestamps=9, language_ids={}, task_ids={},
                           suppress_tokens=(), begin_suppress_tokens=(), max_positions=64, vocab_size=10)
    with pytest.raises(SpecdecError, match="no timestamp tokens"):
        tokens.prompt(None, "transcribe", timestamps=True)
    with pytest.raises(SpecdecError, match="startofprev"):
        WhisperTokens(5, 4, 9, {}, {}, (), (), 64, vocab_size=40).prompt(None, "transcribe", True, previous=[1])


def test_a_windows_suppression_replaces_the_models_rules():
    from asr_specdec.errors import SpecdecError
    from asr_specdec.whisper.runtime.tokens import Suppression

    tokens = WhisperTokens(start_of_transcript=5, end_of_text=4, no_timestamps=9, language_ids={}, task_ids={},
                           suppress_tokens=(1, 2), begin_suppress_tokens=(3, 4), max_positions=64, vocab_size=100)
    default = tokens.rules(2, timestamps=True)
    assert tokens.rules(2, True, Suppression()) == default  # faster-whisper's defaults are the model's here
    custom = tokens.rules(2, True, Suppression(tokens=(7,), blank=False, max_initial_timestamp=0.0))
    assert custom.suppress_tokens == (7,) and custom.begin_suppress_tokens == ()
    assert custom.max_initial_timestamp_index == 0
    assert tokens.rules(2, True, Suppression(max_initial_timestamp=None)).max_initial_timestamp_index is None
    assert tokens.rules(2, False, Suppression(tokens=())).suppress_tokens == ()
    with pytest.raises(SpecdecError, match="max_initial_timestamp"):
        Suppression(max_initial_timestamp=-1.0)
    # a suppressed token is never chosen, whatever its logit
    logits = torch.zeros(1, 100)
    logits[0, 7] = 10.0
    plain_rules = tokens.rules(2, False, Suppression(tokens=(7,)))
    assert plain_rules.apply(logits, 2, [0, 0])[0].argmax().item() != 7


def _reference_row(rules_: TimestampRules, generated: list[int]) -> torch.Tensor:
    """What one row may not choose, slice by slice (the rule as openai's ApplyTimestampRules writes it)."""
    row = torch.zeros(VOCAB, dtype=torch.bool)
    begin = rules_.timestamp_begin
    row[rules_.no_timestamps] = True
    if not generated:
        row[:begin] = True
        if rules_.max_initial_timestamp_index is not None:
            row[begin + rules_.max_initial_timestamp_index + 1:] = True
        return row
    last_was_timestamp = generated[-1] >= begin
    penultimate_was_timestamp = len(generated) < 2 or generated[-2] >= begin
    if last_was_timestamp:
        if penultimate_was_timestamp:
            row[begin:] = True
        else:
            row[:rules_.end_of_text] = True
    timestamps = [token for token in generated if token >= begin]
    if timestamps:
        row[begin:timestamps[-1] if last_was_timestamp and not penultimate_was_timestamp else timestamps[-1] + 1] = True
    return row


@pytest.mark.parametrize("max_initial", [None, 3])
def test_the_pairing_mask_of_a_whole_block_is_each_rows_rule(max_initial):
    chooser = random.Random(7)
    ruled = rules(max_initial=max_initial)
    for _ in range(200):
        generated = [chooser.choice([chooser.randrange(EOT), chooser.randrange(FIRST_TIMESTAMP, VOCAB)])
                     for _ in range(chooser.randrange(8))]
        first = chooser.randrange(len(PROMPT) - 1, len(PROMPT) + len(generated) + 1)
        rows = len(PROMPT) + len(generated) + 1 - first
        mask = ruled.pairing_mask(first, rows, VOCAB, "cpu", PROMPT + generated)
        for row in range(rows):
            index = first + row
            expected = (_reference_row(ruled, generated[: index - len(PROMPT)]) if index >= len(PROMPT)
                        else torch.zeros(VOCAB, dtype=torch.bool))
            assert torch.equal(mask[row], expected), (generated, first, row)
    assert ruled.greedy_mask(len(PROMPT) + 3, 0, VOCAB, "cpu", PROMPT + [1, 2, 3]).shape == (0, VOCAB)  # no rows


@pytest.mark.parametrize("max_initial", [None, 3])
def test_a_short_window_caps_its_timestamps_and_changes_nothing_else(max_initial):
    """chunk_length: no timestamp after the window's last (here <|0.10|>); every other rule as without the cap, and
    a row is never all forbidden."""
    chooser, last = random.Random(11), 5
    capped, free = rules(max_initial=max_initial, max_timestamp_index=last), rules(max_initial=max_initial)
    beyond = torch.arange(VOCAB) > FIRST_TIMESTAMP + last
    for _ in range(200):
        generated = [chooser.choice([chooser.randrange(EOT), chooser.randrange(FIRST_TIMESTAMP, VOCAB)])
                     for _ in range(chooser.randrange(8))]
        index = len(PROMPT) + len(generated)
        mask = capped.pairing_mask(index, 1, VOCAB, "cpu", PROMPT + generated)[0]
        assert torch.equal(mask, free.pairing_mask(index, 1, VOCAB, "cpu", PROMPT + generated)[0] | beyond), generated
        logits = torch.randn(1, VOCAB, generator=torch.Generator().manual_seed(len(generated))) * 3
        scores = capped.apply(logits, index, PROMPT + generated)[0]
        assert not torch.isfinite(scores[beyond]).any() and torch.isfinite(scores).any()
