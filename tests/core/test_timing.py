"""core/timing.py: every run warmed up untimed, then the runs take turns (the order reversed each repeat), each
one's time the median of its repeats."""

from __future__ import annotations

import pytest

from asr_specdec.core import timing


def test_runs_warm_up_then_take_turns_and_report_medians(monkeypatch):
    clock, calls = iter(float(tick) for tick in range(100)), []
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(clock))

    def run(name):
        def call():
            calls.append(name)
            if name == "slow":
                next(clock)  # one more tick inside the timed call: 2 s instead of 1
            return f"{name} {calls.count(name)}"
        return call

    timed = timing.interleaved({"fast": run("fast"), "slow": run("slow")}, repeats=3)
    assert calls == ["fast", "slow", "fast", "slow", "slow", "fast", "fast", "slow"]  # warm-ups, then turns
    assert timed["fast"].seconds == [1.0, 1.0, 1.0] and timed["slow"].seconds == [2.0, 2.0, 2.0]
    assert timed["slow"].median == 2.0
    assert timed["fast"].result == "fast 4" and timed["slow"].result == "slow 4"  # the last repeat's


def test_the_median_is_not_moved_by_one_slow_repeat():
    assert timing.Timed([1.0, 9.0, 1.2], None).median == 1.2


def test_progress_is_told_every_run():
    seen = []
    timing.interleaved({"a": lambda: None, "b": lambda: None}, repeats=2,
                       on_run=lambda done, total, name: seen.append((done, total, name)))
    assert seen == [(0, 6, "a"), (1, 6, "b"), (2, 6, "a"), (3, 6, "b"), (4, 6, "b"), (5, 6, "a")]


def test_at_least_one_repeat():
    with pytest.raises(ValueError):
        timing.interleaved({"a": lambda: None}, repeats=0)
