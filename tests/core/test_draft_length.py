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


def run_beams(schedule, rounds: int, replayed: float, position: float, ceiling: float = 1.0,
              first_plain: float = 1.0) -> list[int]:
    """Draft lengths a beam schedule chooses when a plain round (one step) takes 1 s, each drafted position adds
    `position` s, a drafted step is replayed (after the ones before it were) when the first `replayed` fraction of
    the draft, and a `ceiling` fraction of steps has its beams each the best child of a different parent; the first
    plain round takes `first_plain` s (a cold or disturbed one)."""
    lengths, seen, plain_rounds = [], 0.0, 0
    schedule.update(0, 1, None)  # beam search's first pass feeds the prompt and drafts nothing
    for _ in range(rounds):
        drafted = schedule.tokens
        lengths.append(drafted)
        steps = 1 + int(drafted * replayed)
        for _ in range(steps):
            seen += ceiling
            schedule.observe_step(seen >= 1.0)
            seen -= seen >= 1.0
        plain_rounds += not drafted
        schedule.update(drafted, steps, (first_plain if plain_rounds == 1 and not drafted else 1.0)
                        + position * drafted)
    return lengths


def test_beam_schedule_stops_for_a_drafter_that_never_agrees_and_probes_ever_more_rarely():
    from asr_specdec.core.beam_schedule import PROBE_EVERY as BEAM_PROBE_EVERY

    schedule = DraftLength(4, schedule="adaptive").for_beams(5)
    lengths = run_beams(schedule, 600, 0.0, 0.5)  # beams that a perfect drafter would replay, a drafter that fails
    later = lengths[10:]
    assert set(later) <= {0, 1}
    probes = [index for index, length in enumerate(later) if length]
    assert 3 <= len(probes) <= len(later) // BEAM_PROBE_EVERY
    assert probes[-1] - probes[-2] > probes[1] - probes[0]  # the interval grows while probes fail


def test_beam_schedule_stops_when_verification_costs_more_than_a_perfect_drafter_saves():
    from asr_specdec.core.beam_schedule import PROBE_EVERY_MAX

    schedule = DraftLength(4, schedule="adaptive").for_beams(5)
    lengths = run_beams(schedule, 400, 1.0, 1.2)  # every drafted step replayed, yet a position costs 1.2 steps
    assert sum(lengths[10:]) <= len(lengths) // PROBE_EVERY_MAX + 1


def test_beam_schedule_keeps_drafting_when_it_pays():
    cheap = DraftLength(4, schedule="adaptive").for_beams(5)
    later = run_beams(cheap, 80, 1.0, 0.1)[10:]
    drafted = [length for length in later if length]
    assert min(drafted) >= 4 and len(drafted) >= len(later) * 7 // 8 - 1  # every 8th round plain, to measure it


def test_beam_schedule_is_not_fooled_by_one_slow_plain_round():
    # the first plain round took 10 s: drafted rounds look cheap beside it, until plain rounds are measured again
    schedule = DraftLength(4, schedule="adaptive").for_beams(5)
    lengths = run_beams(schedule, 200, 0.3, 0.8, first_plain=10.0)
    assert sum(lengths[100:]) <= 4


def test_beam_schedule_does_not_probe_when_even_a_perfect_drafter_could_not_pay():
    from asr_specdec.core.beam_schedule import PROBE_EVERY_MAX

    # drafting would pay if beams kept their parents' best children, but they rarely do
    schedule = DraftLength(4, schedule="adaptive").for_beams(5)
    lengths = run_beams(schedule, 2 * PROBE_EVERY_MAX, 0.0, 0.3, ceiling=0.2)
    assert sum(lengths[20:]) <= 2
    assert schedule.ceiling < 0.3


def test_beam_schedules_are_kept_per_beam_size_and_not_copied():
    settings = DraftLength(4, schedule="adaptive")
    schedule = settings.for_beams(5)
    run_beams(schedule, 30, 0.0, 1.0)
    assert settings.for_beams(5) is schedule and schedule.tokens in (0, 1)  # the next window starts from it
    assert settings.for_beams(3) is not schedule and settings.for_beams(3).tokens > 0
    assert settings.copy().for_beams(5) is not schedule
    assert DraftLength(4, schedule="fixed").for_beams(5).tokens == 4
