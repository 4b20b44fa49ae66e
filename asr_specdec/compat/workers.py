"""faster-whisper's `num_workers`: transcriptions called from several Python threads decode at the same time.

Each worker is a transcriber of its own (its own window pipeline, caches and drafter) on the one set of loaded
weights, so workers share the weights and their packs and hold apart everything a decode changes. A decode takes
whichever worker is idle and waits while none is: with one worker (the default) decodes take turns, as before.
More workers cost memory (each its caches, and a drafter model of its own where the mode loads one), as in
faster-whisper.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from dataclasses import replace

from ..whisper.loading import LoadedMain


class Workers:
    def __init__(self, first, count: int):
        """`first`: the SpeculativeWhisper the model was loaded into (worker 0); `count` >= 1 workers in all."""
        self.first = first
        weights = LoadedMain(first.model, first.processor, first.main_name)  # no pipeline: each builds its own
        self.all = [first] + [type(first).from_options(replace(first.model_options, main=weights), first.options)
                              for _ in range(count - 1)]
        self._idle: queue.SimpleQueue = queue.SimpleQueue()
        for worker in self.all:
            self._idle.put(worker)
        self._foreign = threading.Lock()  # decodes drafting with a drafter of no worker's take turns

    @contextlib.contextmanager
    def one(self) -> Iterator:
        """An idle worker, held for the duration of the block."""
        worker = self._idle.get()
        try:
            yield worker
        finally:
            self._idle.put(worker)

    def decode_windows(self, windows, speculation, generator=None):
        """The windows decoded by an idle worker, drafting with that worker's own drafter where the call drafts
        with the first's (a drafter keeps state between its steps, so two decodes may not share one)."""
        with self.one() as worker:
            if speculation is None or speculation is self.first.speculation:
                return worker.decode_windows(windows, worker.speculation, generator)
            with self._foreign:
                return worker.decode_windows(windows, speculation, generator)

    def language_probabilities(self, window):
        with self.one() as worker:
            return worker.language_probabilities(window)
