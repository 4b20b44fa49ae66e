"""Segments as a lazy generator, as faster-whisper's `transcribe` returns them: nothing is decoded until the first
`next()`, and decoding then keeps at most one segment ahead of the reader.

SpeculativeWhisper.transcribe hands each segment to a callback as soon as it is final; here it runs in a worker
thread whose callback waits until the reader takes the segment. Closing the generator (or dropping it) stops the
worker at its next segment.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass


class _Stopped(Exception):
    """The reader closed the generator: the worker gives up."""


@dataclass(frozen=True)
class _Failed:
    error: BaseException


_FINISHED = object()


def lazy_segments(transcribe: Callable[[Callable[[object], None]], None]) -> Iterator:
    """The segments `transcribe(emit)` passes to `emit`, in order; its errors are raised to the reader."""
    handoff: queue.Queue = queue.Queue(maxsize=1)
    stopped = threading.Event()

    def put(item) -> None:
        while not stopped.is_set():
            try:
                handoff.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        raise _Stopped

    def work() -> None:
        try:
            transcribe(put)
            put(_FINISHED)
        except _Stopped:
            pass
        except BaseException as error:  # the reader sees it, as if decoding ran in its own thread
            try:
                put(_Failed(error))
            except _Stopped:
                pass

    worker = threading.Thread(target=work, name="whisper-segments", daemon=True)
    worker.start()
    try:
        while True:
            item = handoff.get()
            if item is _FINISHED:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stopped.set()
