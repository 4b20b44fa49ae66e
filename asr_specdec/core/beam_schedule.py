"""How many tokens to draft per beam each pass of speculative beam search, so that it is never much slower than
plain beam search.

A drafted beam pass pays for its draft steps, for the full logits of every beam at every drafted position and for
the replayed steps' rules and top-k; it saves passes only on the steps where *every* beam's child is its parent's
drafted token. The adaptive schedule measures all of it in seconds of whole rounds (draft, main pass, replay,
row moves), per step of plain rounds and per drafted position of drafted rounds, and picks the draft length k
that maximises the expected beam steps per second,
    argmax_k  E(k) / (1 + k * c),   E(k) = 1 + a + ... + a^k,   c = seconds per drafted position / plain step,
with a the measured probability that a drafted step is replayed. While it drafts, every PLAIN_EVERY-th round is
plain, so that the plain yardstick is measured beside the drafted rounds (timings drift on a shared machine), and
drafting stops whenever drafted rounds measured more seconds per beam step than plain ones, whatever the model
promised. k = 0 is plain beam search.

Two things keep it from costing more than a few percent when drafting does not pay:
- a free ceiling on a, counted on every step, drafted or not: the fraction of steps whose beams are each the best
  child of a different parent, the steps a perfect drafter (one that proposes the main model's best token)
  would replay; a parent's draft is one token, so no drafter replays a step where two beams share a parent.
  When even that ceiling gives k = 0 at the measured costs, the schedule probes only every PROBE_EVERY_MAX
  rounds; otherwise it probes with one token, ever more rarely while probes fail (a probe first re-feeds the
  drafter every token it missed);
- what it learns is kept across windows and calls: the transcriber holds one schedule per beam size
  (DraftLength.for_beams), so a new window starts from the measured costs, not from the priors.
Output never depends on the schedule: every replayed step is a plain step on the bits a plain step computes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PRIOR_ACCEPTANCE = 0.8  # a drafted step replayed, before anything is measured (capped by the ceiling)
PRIOR_COST = 0.5  # seconds per drafted position / seconds per plain step, before it is measured
DECAY = 0.7  # weight kept by older drafted rounds' counts each drafted round
CEILING_DECAY = 0.98  # weight kept by older steps' ceiling counts each step
PROBE_EVERY = 32  # plain rounds between one-token probes, doubled after every probe that did not pay ...
PROBE_EVERY_MAX = 512  # ... up to this; also the probe interval while the ceiling says drafting cannot pay
MARGIN = 1.02  # a longer draft must promise this much more speed (ties go to the shorter draft)
PLAIN_EVERY = 8  # while drafting, every this many rounds one is plain: the yardstick stays fresh


def heuristic_length(tokens: int, drafted: int, accepted: int, minimum: int, maximum: int) -> int:
    """transformers' heuristic schedule (DraftLength's and BeamSchedule's): after a round that drafted, two more
    tokens when all were accepted, else one fewer."""
    if not drafted:
        return tokens
    return min(maximum, tokens + 2) if accepted == drafted else max(minimum, tokens - 1)


@dataclass
class BeamSchedule:
    tokens: int  # the next pass's draft length per beam (0: a plain beam step)
    maximum: int = 16
    schedule: str = "adaptive"  # "fixed": always `tokens`; "heuristic": +2 when every step replayed, else -1
    minimum: int = 1
    _accepted: float = field(default=0.0, repr=False)
    _trials: float = field(default=0.0, repr=False)
    _replayable: float = field(default=0.0, repr=False)  # decayed count of steps under the ceiling
    _steps: float = field(default=0.0, repr=False)
    _plain_step: float | None = field(default=None, repr=False)  # seconds per plain round (one step)
    _position: float | None = field(default=None, repr=False)  # extra seconds per drafted position
    _drafted_step: float | None = field(default=None, repr=False)  # seconds per beam step of drafted rounds
    _idle_rounds: int = field(default=0, repr=False)
    _drafting_rounds: int = field(default=0, repr=False)
    _probe_every: int = field(default=PROBE_EVERY, repr=False)

    @property
    def acceptance(self) -> float:
        """Estimated probability that a drafted step is replayed, given the ones before it were."""
        prior_weight = 2.0
        measured = (self._accepted + PRIOR_ACCEPTANCE * prior_weight) / (self._trials + prior_weight)
        return min(measured, self.ceiling)

    @property
    def ceiling(self) -> float:
        """The fraction of recent steps whose beams were each the best child of a different parent (the steps a
        drafter proposing the main model's best tokens would replay)."""
        prior_weight = 2.0
        return (self._replayable + PRIOR_ACCEPTANCE * prior_weight) / (self._steps + prior_weight)

    @property
    def cost(self) -> float:
        """Seconds per drafted position (draft step, verified position, replayed step) / seconds per plain step."""
        if self._position is None or not self._plain_step:
            return PRIOR_COST
        return self._position / self._plain_step

    def observe_step(self, replayable: bool) -> None:
        """One beam step (with every beam), drafted or not: were its beams each the best child of a different
        parent?"""
        self._replayable = self._replayable * CEILING_DECAY + replayable
        self._steps = self._steps * CEILING_DECAY + 1

    def update(self, drafted: int, steps: int, seconds: float | None) -> None:
        """After a pass that drafted `drafted` tokens per beam and replayed `steps` steps in `seconds` (the whole
        round for this audio row; None: not a representative round, e.g. the prompt's)."""
        accepted = min(max(steps - 1, 0), drafted)
        if self.schedule == "fixed":
            return
        if self.schedule == "heuristic":
            self.tokens = heuristic_length(self.tokens, drafted, accepted, self.minimum, self.maximum)
            return
        self._measure(drafted, accepted, steps, seconds)
        if self._plain_step is None:  # a plain round first: the yardstick of every cost
            self.tokens = 0
            return
        best = self.best_length(self.acceptance)
        # the model aside, drafted rounds must have cost less per step than plain ones, measured side by side
        slower = self._drafted_step is not None and self._drafted_step >= self._plain_step
        if best > 0 and not slower:
            self._idle_rounds, self._probe_every = 0, PROBE_EVERY
            self._drafting_rounds += 1
            self.tokens = 0 if self._drafting_rounds % PLAIN_EVERY == 0 else best
            return
        if drafted:  # a probe (or a draft) that did not pay: probe less often, and measure the next one afresh
            self._probe_every = min(self._probe_every * 2, PROBE_EVERY_MAX)
            self._drafted_step = None
        self._idle_rounds += 1
        every = self._probe_every if self.best_length(self.ceiling) > 0 else PROBE_EVERY_MAX
        self.tokens = 1 if self._idle_rounds % every == 0 else 0

    def _measure(self, drafted: int, accepted: int, steps: int, seconds: float | None) -> None:
        if drafted:
            # a draft is replayed as a prefix: every replayed drafted step and the first one not replayed are trials
            self._accepted = self._accepted * DECAY + accepted
            self._trials = self._trials * DECAY + accepted + (accepted < drafted)
        if not seconds or seconds <= 0:
            return
        if not drafted:
            self._plain_step = _smoothed(self._plain_step, seconds / max(steps, 1))
        elif self._plain_step:
            extra = max(0.0, seconds - self._plain_step) / drafted
            self._position = _smoothed(self._position, extra)
            self._drafted_step = _smoothed(self._drafted_step, seconds / max(steps, 1))

    def best_length(self, acceptance: float) -> int:
        """The draft length with the most expected beam steps per second at this acceptance (0: plain steps)."""
        cost = self.cost
        best, best_rate, expected = 0, 1.0, 1.0
        for length in range(1, self.maximum + 1):
            expected += acceptance ** length
            rate = expected / (1 + length * cost)
            if rate > best_rate * MARGIN:
                best, best_rate = length, rate
        return best


def _smoothed(previous: float | None, value: float) -> float:
    return value if previous is None else 0.7 * previous + 0.3 * value
