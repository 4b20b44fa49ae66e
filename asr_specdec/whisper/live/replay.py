"""Playing a recording into a StreamingTranscriber as if it were live, and what such a run measured.

The audio arrives in chunks at `speed` times real time. On the real clock the player sleeps until each chunk is
due. On the simulated clock nothing sleeps: a chunk's arrival and each update's measured decode time advance the
clock, so the schedule is the one a live microphone would see (an update covers all the audio that arrived while
the last one decoded) and a 60-s clip runs in the time its decodes take. The fixed clock ignores decode time:
every chunk gets its own update, a schedule that does not depend on the machine (for tests).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..io.audio import SAMPLE_RATE
from .streaming import StreamingTranscriber, StreamingUpdate

CLOCKS = ("real", "simulated", "fixed")


@dataclass
class LiveUpdate:
    clock: float  # seconds since the stream began when the update was ready
    update: StreamingUpdate


def play(stream: StreamingTranscriber, samples: np.ndarray, *, chunk_seconds: float = 0.5, speed: float = 1.0,
         clock: str = "simulated") -> Iterator[LiveUpdate]:
    """Feed `samples` (16 kHz) to `stream` chunk by chunk as they become due, updating whenever audio is waiting;
    the last update is the stream's `finish()`."""
    if clock not in CLOCKS:
        raise ValueError(f"unknown clock '{clock}': choose one of {', '.join(CLOCKS)}")
    if chunk_seconds <= 0 or speed <= 0:
        raise ValueError("chunk_seconds and speed must be positive")
    chunk = max(1, round(chunk_seconds * SAMPLE_RATE))
    total, fed, now, began = len(samples), 0, 0.0, time.perf_counter()

    def due(at: float) -> int:  # samples of whole chunks arrived by clock time `at`
        return min(total, math.floor(at * speed / chunk_seconds + 1e-9) * chunk)

    while fed < total:
        available = due(now) if clock != "fixed" else min(total, fed + chunk)
        if available <= fed:  # wait for the next chunk
            next_due = (fed // chunk + 1) * chunk_seconds / speed
            if clock == "real":
                time.sleep(max(0.0, next_due - (time.perf_counter() - began)))
                now = time.perf_counter() - began
            else:
                now = next_due
            continue
        stream.append(samples[fed:available])
        fed = available
        if clock == "fixed":  # the update happens when its audio has arrived
            now = max(now, fed / SAMPLE_RATE / speed)
        update = stream.update()
        now = _after(update, now, clock, began)
        yield LiveUpdate(now, update)
    final = stream.finish()
    yield LiveUpdate(_after(final, now, clock, began), final)


def play_schedule(stream: StreamingTranscriber, samples: np.ndarray, schedule: list[int]) -> Iterator[LiveUpdate]:
    """Replay a recorded run: before each update, the audio up to `schedule[k]` samples has arrived (a run's
    `schedule(updates)`); the last update is the stream's `finish()` with the rest. Decoding is deterministic, so
    the same schedule gives the same updates, whatever the clock that made it (the clock is 0 throughout)."""
    fed = 0
    for received in schedule[:-1]:
        if received > fed:
            stream.append(samples[fed:received])
            fed = received
        update = stream.update()
        if update is not None:
            yield LiveUpdate(0.0, update)
    if fed < len(samples):
        stream.append(samples[fed:])
    yield LiveUpdate(0.0, stream.finish())


def schedule(updates: list[LiveUpdate]) -> list[int]:
    """The samples received at each update of a run (what play_schedule replays)."""
    return [round(live.update.audio_seconds * SAMPLE_RATE) for live in updates]


def _after(update: StreamingUpdate, now: float, clock: str, began: float) -> float:
    if clock == "real":
        return time.perf_counter() - began
    if clock == "simulated":
        return now + update.decode_seconds
    return now


def summarize(updates: list[LiveUpdate], audio_seconds: float) -> dict:
    """What a live run measured: per-update decode times (median, p95; plain ones too with compare, and the median
    per-update speed-up, over the compared updates after the first, which is the warm-up), the lag of
    committed words (the clock when committed minus the word's estimated end in the audio), the real-time factor
    (decode time over audio time) and the final text."""
    decoded = [live.update for live in updates if live.update.decode_seconds > 0]
    lags = [live.clock - word.end for live in updates for word in live.update.words]
    summary = {
        "audio_seconds": round(audio_seconds, 3),
        "updates": len(updates), "decodes": len(decoded),
        "decode_median": _percentile([u.decode_seconds for u in decoded], 50),
        "decode_p95": _percentile([u.decode_seconds for u in decoded], 95),
        "encoder_median": _percentile([u.stats.encoder_seconds for u in decoded if u.stats], 50),
        "mean_word_lag": round(float(np.mean(lags)), 3) if lags else None,
        "words": len(lags),
        "rtf": round(sum(u.decode_seconds for u in decoded) / audio_seconds, 3) if audio_seconds else None,
        "finished_at": round(updates[-1].clock, 3) if updates else None,
        "text": updates[-1].update.committed if updates else "",
    }
    compared = [u for u in decoded if u.plain_decode_seconds is not None]
    if compared:
        timed = compared[1:] or compared  # the first compared update warms both ways up
        summary.update(
            plain_median=_percentile([u.plain_decode_seconds for u in timed], 50),
            plain_p95=_percentile([u.plain_decode_seconds for u in timed], 95),
            speedup_median=_percentile([u.plain_decode_seconds / u.decode_seconds for u in timed], 50),
            compared_updates=len(timed), identical=all(u.identical for u in compared))
    return summary


def _percentile(values: list[float], percent: float) -> float | None:
    return round(float(np.percentile(values, percent)), 4) if values else None
