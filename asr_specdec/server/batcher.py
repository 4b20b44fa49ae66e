"""Dynamic batching: windows submitted by concurrent requests decoded as the rows of one batch.

Each request runs the ordinary `SpeculativeWhisper.transcribe` in its own worker thread, with its window decodes
routed here (`transcribe(window_decoder=...)`). One decoding thread owns the models (drafters keep state, so
only one thread may decode at a time): it takes the oldest waiting window, lets others join it for
`max_wait` seconds or for as long as a batch is running, up to `max_batch_size` rows, decodes them with one
`pipeline.decode(windows, speculation)` call, and hands each request its own rows. A row decoded in a batch has
the tokens it has alone (tests/whisper/test_batch_real.py), so batching changes nobody's answer. Long files join
window by window, each window as soon as the one before it is done (sequential long-form keeps its exact seeking).

Only rows that can share a decode call are batched: the same pipeline (the models), the same speculation (the
drafter and its draft length: a drafter starts once per batch), the same beam search settings (a batch decodes all
its rows with beams or none), and the same timestamp setting (so a batch keeps the greedy fast path that rows
without timestamps get). A sampled request has its own random generator and is decoded alone.

Other work that decodes with the same models (a live stream's update) runs on the decoding thread too, between
batches (`call`).

This module knows nothing about Whisper: a pipeline is anything with `decode(windows, speculation, generator)`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


class Cancelled(Exception):
    """The request's work was dropped: its client went away, it timed out, or the server is stopping."""


class Ticket:
    """One request's handle on the batcher: cancel it and its waiting windows are dropped (a window already
    in a running batch finishes with it). Also collects where its windows went, for the telemetry."""

    def __init__(self):
        self._cancelled = threading.Event()
        self.reason = ""
        self.batch_rows: list[int] = []  # rows in the batch of each of its windows
        self.wait_seconds = 0.0  # time its windows waited for a batch to start

    def cancel(self, reason: str) -> None:
        if not self._cancelled.is_set():
            self.reason = reason
            self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        if self.cancelled:
            raise Cancelled(self.reason)


@dataclass(eq=False)
class _Job:
    pipeline: object
    speculation: object
    windows: list
    generator: object
    ticket: Ticket
    call: Callable[[], object] | None = None  # work run alone on the decoding thread instead of a decode
    queued: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    rows: list | None = None
    error: BaseException | None = None

    @property
    def key(self):
        """Jobs with equal keys can be rows of one decode call; a sampled job has its own generator and key."""
        if self.generator is not None or self.call is not None:
            return self
        return (id(self.pipeline), id(self.speculation), tuple(window.timestamps for window in self.windows),
                tuple(getattr(window, "beam", None) for window in self.windows))

    def finish(self, rows: list | None = None, error: BaseException | None = None) -> None:
        self.rows, self.error = rows, error
        self.done.set()


@dataclass
class BatchCounts:
    batches: int = 0
    rows: int = 0
    largest: int = 0

    def as_dict(self) -> dict:
        return {"batches": self.batches, "rows": self.rows, "largest": self.largest,
                "mean_rows": round(self.rows / self.batches, 2) if self.batches else 0.0}


class WindowBatcher:
    def __init__(self, max_batch_size: int = 8, max_wait: float = 0.005):
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        self.max_batch_size, self.max_wait = max_batch_size, max_wait
        self.counts = BatchCounts()
        self._pending: deque[_Job] = deque()
        self._condition = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name="window-batcher", daemon=True)

    def start(self) -> WindowBatcher:
        self._thread.start()
        return self

    @property
    def waiting(self) -> int:
        return len(self._pending)

    def decode(self, pipeline, windows: list, speculation, generator, ticket: Ticket) -> list:
        """Decode `windows` (as `pipeline.decode(windows, speculation, generator)` would) in a batch with whatever
        else is waiting; blocks the calling worker thread until its rows are done. Raises Cancelled when the
        ticket is cancelled before its windows were taken into a batch, or the batcher is closed."""
        return self._wait(_Job(pipeline, speculation, list(windows), generator, ticket))

    def call(self, function: Callable[[], object], ticket: Ticket):
        """`function()` run on the decoding thread, between batches (no decode overlaps it); blocks the calling
        thread until it returns, and returns its result (or raises its error, or Cancelled as `decode` does)."""
        return self._wait(_Job(None, None, [], None, ticket, call=function))

    def _wait(self, job: _Job):
        ticket = job.ticket
        ticket.check()
        with self._condition:
            if self._closed:
                raise Cancelled("the server is shutting down")
            self._pending.append(job)
            self._condition.notify_all()
        while not job.done.wait(0.05):
            if ticket.cancelled and self._withdraw(job):
                raise Cancelled(ticket.reason)
        if job.error is not None:
            raise job.error
        return job.rows

    def close(self, timeout: float | None = None) -> None:
        """Stop: waiting windows fail with Cancelled, a running batch finishes (up to `timeout` seconds)."""
        with self._condition:
            self._closed = True
            dropped = list(self._pending)
            self._pending.clear()
            self._condition.notify_all()
        for job in dropped:
            job.finish(error=Cancelled("the server is shutting down"))
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _withdraw(self, job: _Job) -> bool:
        with self._condition:
            if job in self._pending:
                self._pending.remove(job)
                return True
        return False

    def _serve(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._decode(batch)

    def _next_batch(self) -> list[_Job] | None:
        """The oldest waiting job and those that may join it, once its wait is over or the batch is full."""
        with self._condition:
            while True:
                self._drop_cancelled()
                if self._pending:
                    first = self._pending[0]
                    rows = self._rows(first.key)
                    wait = first.queued + self.max_wait - time.monotonic()
                    if rows >= self.max_batch_size or wait <= 0 or first.key is first:
                        return self._take(first.key)
                    self._condition.wait(wait)
                elif self._closed:
                    return None
                else:
                    self._condition.wait()

    def _drop_cancelled(self) -> None:
        for job in [job for job in self._pending if job.ticket.cancelled]:
            self._pending.remove(job)
            job.finish(error=Cancelled(job.ticket.reason))

    def _rows(self, key) -> int:
        return sum(len(job.windows) for job in self._pending if job.key == key)

    def _take(self, key) -> list[_Job]:
        """Jobs with `key`, oldest first, up to max_batch_size rows (the first one always, however large)."""
        batch, rows = [], 0
        for job in list(self._pending):
            if job.key != key:
                continue
            if batch and rows + len(job.windows) > self.max_batch_size:
                break
            batch.append(job)
            rows += len(job.windows)
            self._pending.remove(job)
        return batch

    def _decode(self, batch: list[_Job]) -> None:
        started = time.monotonic()
        windows = [window for job in batch for window in job.windows]
        first = batch[0]
        if first.call is not None:
            try:
                first.finish(rows=first.call())
            except Exception as error:
                first.finish(error=error)
            return
        try:
            rows = first.pipeline.decode(windows, first.speculation, first.generator)
        except Exception as error:
            if len(batch) == 1:
                first.finish(error=error)
                return
            # one request's bad window must not fail the others: each decodes alone, and only it fails
            for job in batch:
                self._decode([job])
            return
        for job in batch:
            job.ticket.wait_seconds += started - job.queued
            job.ticket.batch_rows.extend([len(windows)] * len(job.windows))
        self.counts.batches += 1
        self.counts.rows += len(windows)
        self.counts.largest = max(self.counts.largest, len(windows))
        begin = 0
        for job in batch:
            job.finish(rows=rows[begin:begin + len(job.windows)])
            begin += len(job.windows)
