"""Timing several ways of doing the same work so that their ratio can be trusted on a shared machine: each runs
once untimed first (a warm-up), then they take turns, repeat after repeat (the order reversed every repeat), so
that a slow moment falls on all of them alike; each one's time is the median of its repeats."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Timed:
    seconds: list[float]  # one per repeat, in order
    result: Any  # what the last repeat returned

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def interleaved(runs: dict[str, Callable[[], Any]], repeats: int,
                on_run: Callable[[int, int, str], None] | None = None) -> dict[str, Timed]:
    """Each of `runs` once untimed, then `repeats` timed rounds in which every run goes once, taking turns;
    `on_run(done, total, name)` before each call (progress)."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    names = list(runs)
    total, done = len(names) * (repeats + 1), 0
    timed = {name: Timed([], None) for name in names}
    for name in names:
        if on_run is not None:
            on_run(done, total, name)
        runs[name]()
        done += 1
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else reversed(names):
            if on_run is not None:
                on_run(done, total, name)
            started = time.perf_counter()
            result = runs[name]()
            timed[name].seconds.append(time.perf_counter() - started)
            timed[name].result = result
            done += 1
    return timed
