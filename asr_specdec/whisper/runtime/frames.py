"""The time grid of a Whisper window: feature frames, timestamp steps and seconds."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Frames:
    """The time grid: feature frames per window, frames per timestamp step, seconds per frame, and the frames the
    encoder takes (a window shorter than that, faster-whisper's chunk_length, is zero-padded to it)."""

    window: int = 3000
    per_timestamp: int = 2  # the encoder's total convolution stride
    seconds: float = 0.01  # hop length / sample rate
    encoder_input: int | None = None  # None: the window

    @property
    def padded(self) -> int:
        return self.encoder_input or self.window

    @property
    def timestamp_seconds(self) -> float:
        return self.per_timestamp * self.seconds
