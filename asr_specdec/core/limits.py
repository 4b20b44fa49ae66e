"""The most a transcription may ask for, in one frozen value: beams, sampled candidates, draft tokens, speakers.

Its defaults are what the options objects accept (each is checked where its options object is built); a
deployment may tighten them, never widen them (the server's settings hold one such value, and the web app's
controls take their ranges from one)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields

from ..errors import OptionError

MAX_DRAFT_TOKENS = 16  # also the adaptive schedule's longest draft (draft_length.py)
COUNTS = {"diarize": "a number of speakers"}  # what a limit counts, where its name does not say


@dataclass(frozen=True)
class OptionLimits:
    beam_size: int = 16
    best_of: int = 16
    num_draft_tokens: int = MAX_DRAFT_TOKENS
    diarize: int = 32  # speakers asked for (diarize=N)
    where: str = ""  # how a refusal says whose limit it is ("on this server"); empty: the options' own

    def __post_init__(self):
        for item in fields(self):
            if item.name == "where":
                continue
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= item.default:
                raise OptionError(item.name, f"the limit on {{{item.name}}} must be a whole number from 1 to "
                                             f"{item.default}, not {value!r}")

    def check(self, name: str, value) -> None:
        """OptionError unless `value` (None: not asked) is a whole number from 1 to this limit on `name`."""
        if value is None:
            return
        cap = getattr(self, name)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= cap:
            where = f" {self.where}" if self.where else ""
            raise OptionError(name, f"{{{name}}} must be {COUNTS.get(name, 'a whole number')} from 1 to {cap}{where}, "
                                    f"not {value!r}")


LIMITS = OptionLimits()  # the options objects' own
