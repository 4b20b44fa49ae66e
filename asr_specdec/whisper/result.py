"""What a transcription returns: text, timed segments, the tokens of each window and the telemetry."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.stats import DecodeStats
from .io.formats import Segment


@dataclass
class TranscriptionResult:
    text: str
    segments: list[Segment]
    window_tokens: list[list[int]]  # generated ids per 30-second window (ending with end-of-text if produced)
    stats: DecodeStats
    language: str | None
    duration: float
    mode: str
    main_model: str
    assistant_model: str | None = None
    compute_type: str | None = None
    backend: str | None = None  # "native avx2", "pytorch (cpu)", ...
    timings: dict = field(default_factory=dict)
    language_probability: float | None = None  # of the detected language (1.0 when given); None: nothing detected
    turns: list = field(default_factory=list)  # speakers.turns.Turn, when diarized

    @property
    def tokens(self) -> list[int]:
        return [token for window in self.window_tokens for token in window]
