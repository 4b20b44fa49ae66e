"""The logit rules on blocks of unrelated rows (`apply_rows`, `log_probs_rows`, then top-k, as beam search works
them out for all beams of a step at once), at Whisper's real vocabulary size: a row's numbers are bit for bit
those of the same row worked out alone, whatever rows share its block, on one thread or two; and they equal
the rules applied to that row followed by a log-softmax (the definition beam search had row by row)."""

from __future__ import annotations

import random

import pytest
import torch

from asr_specdec.core.logits import LogitRules
from asr_specdec.whisper.runtime.timestamps import TimestampRules

VOCAB, END_OF_TEXT, NO_TIMESTAMPS, FIRST_TIMESTAMP = 51865, 50257, 50363, 50364  # multilingual Whisper's ids
PROMPT = [50258, 50259, 50359]
TOP = 6  # beam_size + 1 at 5 beams
INF = float("inf")


def timestamp_rules(**repetition) -> TimestampRules:
    return TimestampRules((1, 2, 7, 50362), (220, END_OF_TEXT), begin_index=len(PROMPT),
                          timestamp_begin=FIRST_TIMESTAMP, no_timestamps=NO_TIMESTAMPS, end_of_text=END_OF_TEXT,
                          max_initial_timestamp_index=50, **repetition)


RULES = [timestamp_rules(), LogitRules((1, 2, 7), (220, END_OF_TEXT), len(PROMPT)),
         timestamp_rules(repetition_penalty=1.3, no_repeat_ngram_size=2)]
RULE_NAMES = ["timestamps", "suppression", "repetition"]


def rows_and_logits(seed: int, count: int = 24) -> tuple[list[tuple[int, list[int]]], torch.Tensor]:
    """`count` rows of assorted sequences (no generated token yet, after a lone or paired timestamp, in text, at
    the last timestamps) and logits with -inf entries, some rows favouring timestamps (the group rule forces
    one there), some with fewer finite entries than the top-k takes (top-k ties at -inf)."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(count, VOCAB, generator=generator) * 4
    rows = []
    for row in range(count):
        kind = row % 6
        timestamp = FIRST_TIMESTAMP + rng.randrange(1400)
        generated = [[], [timestamp], [timestamp, 11, 12, timestamp + 40],
                     [timestamp, 11, timestamp + 20, timestamp + 20, 13, 11], [timestamp, 14, 15, 14],
                     [FIRST_TIMESTAMP, 16, VOCAB - 2]][kind]
        rows.append((len(PROMPT) + len(generated), PROMPT + generated))
        holes = torch.randint(0, VOCAB, (rng.randrange(5000),), generator=generator)
        logits[row, holes] = -INF
        if kind in (2, 4) and row % 4 == 0:
            logits[row, FIRST_TIMESTAMP:] += 8.0  # timestamps together outweigh text: a timestamp is forced
        if kind == 3 and row % 4 == 1:
            logits[row, 100] += 30.0  # one confident text token
        if kind == 5:
            logits[row, :END_OF_TEXT + 1] = -INF  # a closing timestamp near the end: three finite entries left
    return rows, logits


def worked_out(rules: LogitRules, logits: torch.Tensor, rows) -> tuple[torch.Tensor, ...]:
    log_probs = rules.log_probs_rows(logits.clone(), rows, overwrite=True)
    values, tokens = log_probs.topk(TOP)
    return log_probs, values, tokens


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rules", RULES, ids=RULE_NAMES)
def test_a_row_is_the_same_alone_and_in_any_block(rules, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        rows, logits = rows_and_logits(threads)
        alone = [worked_out(rules, logits[row:row + 1], rows[row:row + 1]) for row in range(len(rows))]
        rng = random.Random(threads)
        blocks = [list(range(len(rows)))] + [[rng.randrange(len(rows)) for _ in range(size)]
                                             for size in (2, 3, 5, 5, 7, 12, 40)]
        for block in blocks:
            together = worked_out(rules, logits[block], [rows[row] for row in block])
            for place, row in enumerate(block):
                for single, batched in zip(alone[row], together):
                    assert torch.equal(single[0], batched[place]), (row, block)
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("rules", RULES, ids=RULE_NAMES)
def test_log_probs_are_the_log_softmax_of_the_ruled_logits(rules):
    rows, logits = rows_and_logits(7, count=12)
    log_probs = rules.log_probs_rows(logits, rows)
    forced = 0
    for row, (index, tokens) in enumerate(rows):
        scores = rules.apply(logits[row:row + 1], index, tokens)
        assert torch.equal(log_probs[row:row + 1], torch.log_softmax(scores.float(), dim=-1)), row
        assert torch.equal(rules.apply_rows(logits[row:row + 1], [(index, tokens)]), scores)
        # end-of-text is forbidden after the first row only by the group rule
        forced += bool(index > len(PROMPT) and torch.isfinite(logits[row, END_OF_TEXT])
                       and torch.isinf(scores[0, END_OF_TEXT]))
    assert not isinstance(rules, TimestampRules) or forced >= 2  # the group rule's second log-softmax is tested
    assert torch.equal(logits, rows_and_logits(7, count=12)[1])  # without overwrite, the input is left as it was


def test_a_block_of_rows_of_one_sequence_equals_apply():
    rules = timestamp_rules()
    _, logits = rows_and_logits(3, count=5)
    sequence = PROMPT + [FIRST_TIMESTAMP + 3, 11, 12, FIRST_TIMESTAMP + 30, FIRST_TIMESTAMP + 30]
    rows = [(len(PROMPT) + 1 + row, sequence) for row in range(5)]
    assert torch.equal(rules.apply_rows(logits, rows), rules.apply(logits, len(PROMPT) + 1, sequence))
    assert torch.equal(rules.log_probs_rows(logits, rows),
                       torch.log_softmax(rules.apply(logits, len(PROMPT) + 1, sequence), dim=-1))
