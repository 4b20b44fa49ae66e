"""Transcription one 30-second window at a time, so the page can show progress on long audio.

The windows, the language carried from the first window to the rest, and the merged segments and
telemetry are what `SpeculativeWhisper.transcribe` does in one call; here each window is reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from asr_specdec.audio import duration_seconds, split_long_audio
from asr_specdec.formats import Segment
from asr_specdec.stats import DecodeStats
from asr_specdec.whisper import SpeculativeWhisper, TranscriptionResult

Progress = Callable[[float, str], None]  # (fraction done, what is happening)


def transcribe_with_progress(transcriber: SpeculativeWhisper, samples: np.ndarray,
                             report: Progress) -> TranscriptionResult:
    started = time.perf_counter()
    windows = split_long_audio(samples)
    stats, segments, window_tokens, language = DecodeStats(), [], [], None
    for index, (offset, window) in enumerate(windows):
        report(index / len(windows), f"transcribing window {index + 1} of {len(windows)}")
        part = transcriber.transcribe(window, language=language)
        language = language or part.language
        stats.add(part.stats)
        window_tokens += part.window_tokens
        segments += [Segment(round(offset + s.start, 3), round(offset + s.end, 3), s.text) for s in part.segments]
    stats.total_seconds = time.perf_counter() - started
    report(1.0, "done")
    return replace(part, text=" ".join(segment.text for segment in segments), segments=segments,
                   window_tokens=window_tokens, stats=stats, language=language,
                   duration=duration_seconds(samples))
