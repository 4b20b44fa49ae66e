"""The server's transcribers: the one it was started with, and siblings sharing its main model for requests
that ask for another drafting mode or draft length (`mode`, `num_draft_tokens` form fields).

Greedy output is the main model's whatever the drafter, so a sibling changes speed and telemetry, never the
text. Siblings are built on first use (an int8 drafter takes about a second) and the last few are kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace

from ..core.modes import ASSISTANT_MODES, CPU_ONLY_REASON, MODES, modes_for
from ..errors import SpecdecError
from ..whisper import SpeculativeWhisper


class Transcribers:
    def __init__(self, default: SpeculativeWhisper, keep: int = 4):
        self.default, self.keep = default, keep
        self._siblings: OrderedDict[tuple[str, int], SpeculativeWhisper] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes a request may ask for: the server's own, and every mode that needs no second model and runs on
        the server's device."""
        runnable = modes_for(str(self.default.device))
        return tuple(mode for mode in MODES if mode == self.default.mode
                     or (mode not in ASSISTANT_MODES and mode in runnable))

    def refusal(self, mode: str) -> str:
        """Why no transcriber here can draft in `mode`."""
        why = ("unknown mode" if mode not in MODES else CPU_ONLY_REASON if mode not in ASSISTANT_MODES else
               "it needs an assistant model given at start-up (--mode, --assistant)")
        return f"mode '{mode}' is not available on this server ({why}); use one of {', '.join(self.modes)}"

    def check(self, mode: str | None) -> None:
        """Raise SpecdecError (a 400) for a mode no transcriber here can serve (a draft length out of range is
        refused by the options: ModelOptions)."""
        if mode is not None and mode not in self.modes:
            raise SpecdecError(self.refusal(mode))

    def get(self, mode: str | None = None, num_draft_tokens: int | None = None) -> SpeculativeWhisper:
        """The transcriber for these options (the default when they are its own); call from a worker thread."""
        self.check(mode)
        default = self.default
        key = (mode or default.mode, num_draft_tokens or default.draft_length.tokens)
        if key == (default.mode, default.draft_length.tokens):
            return default
        with self._lock:
            if key not in self._siblings:
                self._siblings[key] = self._sibling(*key)
                while len(self._siblings) > self.keep:
                    self._siblings.popitem(last=False)
            self._siblings.move_to_end(key)
            return self._siblings[key]

    def _sibling(self, mode: str, num_draft_tokens: int) -> SpeculativeWhisper:
        default = self.default
        # the same drafter object serves both when the mode is the same: only the decoding thread runs drafters
        drafter = default.drafter if mode == default.mode and default.drafter is not None else None
        model = replace(default.model_options, main=default.loaded(), processor=None, mode=mode, drafter=drafter,
                        num_draft_tokens=num_draft_tokens)
        return SpeculativeWhisper.from_options(model, default.options)  # the server-wide transcription options
