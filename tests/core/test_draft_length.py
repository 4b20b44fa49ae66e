"""Draft-length schedules: fixed stays, the heuristic moves +2/-1, and the adaptive schedule drafts long for a
cheap drafter that agrees, stops drafting (with sparse probes) for one that does not or costs too much."""

from __future__ import annotations

import pytest

from asr_specdec.core.draft_length import PROBE_EVERY, DraftLength


def run(schedule: DraftLength, rounds: int, accept: float, draft_step: float, main_pass: float = 1.0) -> list[int]:
    """Draft lengths chosen over `rounds` rounds when each draft token is accepted with certainty (accept=1),
    never (0), or the first `accept` fraction of each draft."""
    lengths = []
    for _ in range(rounds):
        drafted = schedule.tokens
        lengths.append(drafted)
        accepted = int(drafted * accept)
        schedule.update(drafted, accepted, drafted * draft_step, main_pass)
    return lengths


def test_fixed_and_heuristic():
    assert run(DraftLength(5, schedule="fixed"), 4, 0.0, 0.5) == [5, 5, 5, 5]
    assert run(DraftLength(5, schedule="heuristic"), 4, 1.0, 0.5) == [5, 7, 9, 11]
    assert run(DraftLength(5, dynamic=True), 4, 0.0, 0.5) == [5, 4, 3, 2]
    assert DraftLength(3, schedule="constant").schedule == "fixed"  # transformers' name
    with pytest.raises(ValueError):
        DraftLength(3, schedule="sometimes")


def test_adaptive_drafts_long_for_a_cheap_drafter_that_agrees():
    lengths = run(DraftLength(8, schedule="adaptive"), 20, 1.0, 0.05)
    assert min(lengths[5:]) >= 12


def test_adaptive_stops_drafting_for_a_drafter_that_never_agrees_and_probes_sparsely():
    lengths = run(DraftLength(8, schedule="adaptive"), 60, 0.0, 0.3)
    assert lengths[0] == 8 and sum(lengths[:4]) <= 8 + 3
    later = lengths[10:]
    assert set(later) <= {0, 1} and 1 in later
    assert sum(later) <= len(later) // PROBE_EVERY + 1


def test_adaptive_stops_for_a_drafter_as_slow_as_the_main_model():
    lengths = run(DraftLength(8, schedule="adaptive"), 30, 0.6, 1.0)
    assert set(lengths[10:]) <= {0, 1}


def test_adaptive_comes_back_when_the_drafter_starts_agreeing():
    schedule = DraftLength(8, schedule="adaptive")
    run(schedule, 30, 0.0, 0.1)
    assert max(run(schedule, 40, 1.0, 0.1)[-5:]) >= 8


def test_beam_schedules_learn_the_verification_cost_and_probe_rarely():
    from asr_specdec.core.draft_length import BEAM_PROBE_EVERY

    # a pass costs 1 without a draft and 1 + 1.2 per drafted position: drafting stops although every token agrees
    schedule, lengths = DraftLength(4, schedule="adaptive").for_beams(), []
    schedule.update(0, 0, 0.0, 1.0)  # beam search's first step drafts nothing
    for _ in range(200):
        drafted = schedule.tokens
        lengths.append(drafted)
        schedule.update(drafted, drafted, drafted * 0.3, 1.0 + 1.2 * drafted)
    assert schedule.learn_verify_cost and set(lengths[20:]) <= {0, 1}
    assert 0 < sum(lengths[20:]) <= len(lengths[20:]) // BEAM_PROBE_EVERY + 1
    # the same drafter with cheap verification keeps drafting
    cheap = DraftLength(4, schedule="adaptive").for_beams()
    cheap.update(0, 0, 0.0, 1.0)
    for _ in range(30):
        cheap.update(cheap.tokens, cheap.tokens, cheap.tokens * 0.05, 1.0 + 0.02 * cheap.tokens)
    assert cheap.tokens >= 4
