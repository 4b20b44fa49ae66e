"""A live stream's audio intake: chunks of any rate (or 16-bit PCM bytes) resampled to 16 kHz and appended to the
buffer not yet cut away; `append` and the decoder's `snapshot`/`drop` may run in different threads. `is_quiet`
tells a buffer with no sound in it (not decoded)."""

from __future__ import annotations

import threading

import numpy as np

from ...errors import AudioError
from ..io import audio as audio_io

SILENCE_RMS = 0.001  # -60 dBFS: a 25-ms frame quieter than this holds no speech (quiet speech is louder)


def is_quiet(samples: np.ndarray, silence_rms: float = SILENCE_RMS) -> bool:
    """True when no 25-ms frame of `samples` is louder than `silence_rms`."""
    frame = int(audio_io.RMS_FRAME_SECONDS * audio_io.SAMPLE_RATE)
    padded = np.pad(samples, (0, -len(samples) % frame)).reshape(-1, frame)
    return bool(np.sqrt(np.square(padded, dtype=np.float64).mean(axis=1).max()) < silence_rms)


class AudioIntake:
    def __init__(self):
        self._lock = threading.Lock()
        self.samples = np.zeros(0, dtype=np.float32)  # the buffer: audio received and not cut away
        self.start = 0  # the buffer's first sample in the stream
        self.received = 0  # samples received in all
        self._rate: float | None = None
        self._resampler = None

    def append(self, samples, sample_rate: float | None = None) -> None:
        """Add audio: a sample array (any rate, given by `sample_rate`; 16 kHz when None; mono or 2-D) or raw
        bytes of 16-bit little-endian PCM. An empty chunk is fine. The rate may not change within a stream."""
        if isinstance(samples, (bytes, bytearray, memoryview)):
            if len(samples) % 2:
                raise AudioError("PCM chunk: 16-bit samples need an even number of bytes")
            samples = np.frombuffer(bytes(samples), dtype="<i2")
        if not isinstance(samples, np.ndarray):
            raise AudioError(f"audio chunk: expected a sample array or PCM bytes, not {type(samples).__name__}")
        rate = self._check_rate(sample_rate)
        if samples.size == 0:
            return
        mono = audio_io.load_audio(samples)  # mono float32, scaled, checked (at the chunk's own rate)
        if rate != audio_io.SAMPLE_RATE:
            if self._resampler is None:
                import soxr

                self._resampler = soxr.ResampleStream(rate, audio_io.SAMPLE_RATE, 1, dtype="float32", quality="HQ")
            mono = self._resampler.resample_chunk(mono)
        self._extend(mono)

    def close(self) -> None:
        """The end of the stream: the resampler's last samples join the buffer."""
        if self._resampler is not None:
            self._extend(self._resampler.resample_chunk(np.zeros(0, dtype=np.float32), last=True))

    def snapshot(self) -> tuple[np.ndarray, int, int]:
        """(the buffer, its first sample in the stream, samples received) as they are now."""
        with self._lock:
            return self.samples, self.start, self.received

    def drop(self, count: int) -> int:
        """Cut up to `count` samples from the start of the buffer (audio appended meanwhile stays); how many."""
        with self._lock:
            count = min(max(count, 0), len(self.samples))
            self.samples = self.samples[count:].copy()
            self.start += count
        return count

    def clear(self) -> None:
        with self._lock:
            self.samples = np.zeros(0, dtype=np.float32)

    def _extend(self, mono: np.ndarray) -> None:
        with self._lock:
            self.samples = np.concatenate([self.samples, mono])
            self.received += len(mono)

    def _check_rate(self, sample_rate) -> float:
        rate = audio_io.SAMPLE_RATE if sample_rate is None else sample_rate
        if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)) or not 0 < rate < 1e6:
            raise AudioError(f"audio chunk: sample_rate must be a positive number of Hz, got {sample_rate!r}")
        if self._rate is not None and rate != self._rate:
            raise AudioError(f"audio chunk: the sample rate changed from {self._rate:g} to {rate:g} Hz mid-stream")
        self._rate = float(rate)
        return self._rate
