"""Plain against speculative decoding of the same audio, timed so that the speed-up is the one a benchmark
measures (eval/bench/speed.py): the same samples in memory, `transcribe` timed from samples to result, each side
warmed up, the two taking turns over a few repeats (core/timing.py), each side's time the median of its repeats.
Every timed call runs its own encoder: the encoding a call keeps for a retry of the same audio
(runtime/pipeline.py) is dropped before each, so neither side takes the other's (or its own last) encoding, even
where the two share one loaded model and pipeline (the command line's --compare)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.timing import interleaved
from .io.audio import load_audio
from .result import TranscriptionResult

REPEATS = 3  # timed runs of each side, after one warm-up each


@dataclass(frozen=True)
class SpeedComparison:
    plain: TranscriptionResult  # the last timed run's result of each side
    speculative: TranscriptionResult
    plain_seconds: float  # the median of the side's timed runs
    speculative_seconds: float
    repeats: int

    @property
    def speedup(self) -> float:
        return self.plain_seconds / max(self.speculative_seconds, 1e-9)

    @property
    def identical(self) -> bool:
        return self.plain.tokens == self.speculative.tokens

    @property
    def method(self) -> str:
        """How the times were taken, for the output."""
        return f"median of {self.repeats} interleaved runs each after a warm-up, every run encoding its audio"

    def as_dict(self) -> dict:
        return {"plain_seconds": round(self.plain_seconds, 4),
                "speculative_seconds": round(self.speculative_seconds, 4), "speedup": round(self.speedup, 3),
                "identical": self.identical, "mode": self.speculative.mode, "repeats": self.repeats,
                "timing": self.method}


def compare_speeds(plain, speculative, audio, *, sample_rate: float | None = None, repeats: int = REPEATS,
                   on_run: Callable[[int, int, str], None] | None = None, **call) -> SpeedComparison:
    """Time `plain.transcribe` against `speculative.transcribe` (two SpeculativeWhisper, which may share their
    weights) on `audio` (a path, bytes or samples), each call with the keyword arguments `call`; `on_run(done,
    total, side)` before each run ("plain" or "speculative")."""
    samples = load_audio(audio, sample_rate)

    def run(whisper):
        def transcribe() -> TranscriptionResult:
            whisper.forget_encoding()
            return whisper.transcribe(samples, **call)
        return transcribe

    timed = interleaved({"plain": run(plain), "speculative": run(speculative)}, repeats, on_run)
    return SpeedComparison(timed["plain"].result, timed["speculative"].result, timed["plain"].median,
                           timed["speculative"].median, repeats)
