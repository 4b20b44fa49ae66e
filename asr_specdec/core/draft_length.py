"""How many tokens to draft each round: fixed, transformers' +2/-1 heuristic, or adaptive (Whisper's default).

The adaptive schedule picks, each round, the draft length k that maximises the expected tokens per second:
a round with k draft tokens, each accepted with probability a (after the previous ones), yields on average
E(k) = 1 + a + ... + a^k tokens for k draft steps and one main pass, so it chooses
    argmax_k  E(k) / (1 + k * c),     c = (one draft step + one more verified position) / one main pass,
with a and c measured as it goes (acceptance counted per drafted token, both decayed so recent rounds count
most; costs from the engine's timings, except when sampling: a seeded run must choose the same lengths, and
so draw the same random numbers, every time, so it assumes a fixed cost). When no k > 0 beats plain decoding
(a drafter that rarely agrees, or one nearly as slow as the main model), it stops drafting and probes with one
token every few rounds, so a bad drafter costs little more than plain decoding while a good one drafts long.
Output never depends on the schedule: verification keeps exactly the main model's tokens whatever is drafted.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

from ..errors import OptionError
from .beam_schedule import BeamSchedule, heuristic_length
from .limits import MAX_DRAFT_TOKENS

# On the CPU the int8 self-drafter agrees ~95% of the time: long drafts pay when its step is cheap
DEFAULT_DRAFT_TOKENS = 8
SCHEDULES = ("adaptive", "fixed", "heuristic")
# transformers' names for the same schedules (num_assistant_tokens_schedule)
SCHEDULE_ALIASES = {"constant": "fixed", "heuristic_transient": "heuristic"}

PRIOR_ACCEPTANCE = 0.8  # before anything is measured: worth a first draft
PRIOR_COST = 0.3  # draft step / main pass, before it is measured
VERIFY_COST = 0.05  # a verification pass grows by about this much of a main pass per extra position
DECAY = 0.7  # weight kept by older rounds' counts each round
PROBE_EVERY = 8  # rounds without drafting between one-token probes


@dataclass
class DraftLength:
    tokens: int = DEFAULT_DRAFT_TOKENS  # the first round's draft length (every round's when fixed)
    dynamic: bool = False  # older switch for the heuristic schedule
    minimum: int = 1
    maximum: int = MAX_DRAFT_TOKENS
    schedule: str = "fixed"
    _accepted: float = field(default=0.0, repr=False)
    _trials: float = field(default=0.0, repr=False)
    _draft_step: float | None = field(default=None, repr=False)  # seconds per draft step
    _main_pass: float | None = field(default=None, repr=False)  # seconds per main pass
    _idle_rounds: int = field(default=0, repr=False)
    _beams: dict = field(default_factory=dict, repr=False, compare=False)  # beam size -> its BeamSchedule

    def __post_init__(self):
        if isinstance(self.tokens, bool) or not isinstance(self.tokens, numbers.Integral) or self.tokens < 1:
            raise OptionError("num_draft_tokens", f"{{num_draft_tokens}} must be an integer >= 1 (mode off decodes "
                                                  f"without drafts), not {self.tokens!r}")
        self.schedule = SCHEDULE_ALIASES.get(self.schedule, self.schedule)
        if self.dynamic:
            self.schedule = "heuristic"
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown draft schedule '{self.schedule}': choose one of {', '.join(SCHEDULES)}")
        self.maximum = max(self.maximum, self.tokens)

    def copy(self) -> DraftLength:
        """A fresh schedule with these settings (the length adapts per sequence)."""
        return DraftLength(self.tokens, self.dynamic, self.minimum, self.maximum, self.schedule)

    def for_beams(self, beam_size: int) -> BeamSchedule:
        """The schedule of speculative beam search with `beam_size` beams (beam_schedule.py): one per beam size,
        kept with these settings, so that what it measured carries over to the next window and call."""
        if beam_size not in self._beams:
            schedule = BeamSchedule(self.tokens, self.maximum, self.schedule, self.minimum)
            if schedule.schedule == "adaptive":
                schedule.tokens = schedule.best_length(schedule.acceptance)
            self._beams[beam_size] = schedule
        return self._beams[beam_size]

    @property
    def acceptance(self) -> float:
        """Estimated probability that a draft token is accepted, given the ones before it were."""
        prior_weight = 2.0
        return (self._accepted + PRIOR_ACCEPTANCE * prior_weight) / (self._trials + prior_weight)

    @property
    def cost(self) -> float:
        """(draft step + one more verified position) / main pass."""
        ratio = PRIOR_COST if not (self._draft_step and self._main_pass) else self._draft_step / self._main_pass
        return ratio + VERIFY_COST

    def update(self, drafted: int, accepted: int, draft_seconds: float = 0.0, verify_seconds: float = 0.0) -> None:
        if self.schedule == "fixed":
            return
        if self.schedule == "heuristic":
            self.tokens = heuristic_length(self.tokens, drafted, accepted, self.minimum, self.maximum)
            return
        self._measure(drafted, accepted, draft_seconds, verify_seconds)
        best = self.best_length()
        if best == 0:
            self._idle_rounds += 1
            self.tokens = 1 if self._idle_rounds % PROBE_EVERY == 0 else 0
        else:
            self._idle_rounds = 0
            self.tokens = best

    def _measure(self, drafted: int, accepted: int, draft_seconds: float, verify_seconds: float) -> None:
        if drafted:
            # a draft is accepted as a prefix: every accepted token and the first rejected one are trials
            self._accepted = self._accepted * DECAY + accepted
            self._trials = self._trials * DECAY + accepted + (accepted < drafted)
            if draft_seconds > 0:
                self._draft_step = _smoothed(self._draft_step, draft_seconds / drafted)
        if verify_seconds > 0:
            self._main_pass = _smoothed(self._main_pass, verify_seconds)

    def best_length(self) -> int:
        """The draft length with the most expected tokens per unit of time (0: plain decoding)."""
        acceptance, cost = self.acceptance, self.cost
        best, best_rate, expected = 0, 1.0, 1.0
        for length in range(1, self.maximum + 1):
            expected += acceptance ** length
            rate = expected / (1 + length * cost)
            if rate > best_rate * 1.02:  # ties and near-ties go to the shorter draft
                best, best_rate = length, rate
        return best


def _smoothed(previous: float | None, value: float) -> float:
    return value if previous is None else 0.7 * previous + 0.3 * value
