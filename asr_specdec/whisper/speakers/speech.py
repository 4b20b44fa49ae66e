"""Where the speech is, taken from the transcript (no VAD model): the transcription already placed every word, so
the speech is the words, each widened a little, overlapping ones joined. Whisper's word times run over pauses (a
turn's last word often ends where the next one starts, gap included), so the quiet stretches inside that speech
are found from the sound itself (`pauses`: frame power far under the speech's loud frames) and left out of the
turns (turns.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..io.audio import SAMPLE_RATE
from ..io.formats import Segment

FRAMES_PER_SECOND = 100  # the speaker encoder's 10-ms mel frames


@dataclass(frozen=True)
class SpeechFromWords:
    word_pad_seconds: float = 0.2  # each word widened by this on both sides; overlapping words are one stretch
    pause_seconds: float = 0.3  # a stretch at least this long of quiet frames is a pause, not speech
    pause_db: float = 30.0  # a frame this far below the speech's loud level (90th percentile of its frames) is quiet
    kept_seconds: float = 0.1  # of a pause, this much either side stays with the speech around it


WORD_SPEECH = SpeechFromWords()
LOUD_QUANTILE = 0.9


def word_spans(segments: Iterable[Segment]) -> list[tuple[float, float]]:
    """(start, end) seconds of each word; a segment without words counts as one word."""
    return [(word.start, word.end) for segment in segments
            for word in (segment.words or (segment,)) if word.end > word.start]


def speech_of(segments: Iterable[Segment], sample_count: int,
              options: SpeechFromWords = WORD_SPEECH) -> list[tuple[int, int]]:
    """(start, end) samples of the transcript's speech, in order: its words widened, overlapping ones joined."""
    regions: list[tuple[int, int]] = []
    pad = options.word_pad_seconds
    for start, end in sorted(word_spans(segments)):
        begin = max(0, round((start - pad) * SAMPLE_RATE))
        finish = min(sample_count, round((end + pad) * SAMPLE_RATE))
        if finish <= begin:
            continue
        if regions and begin <= regions[-1][1]:
            regions[-1] = (regions[-1][0], max(finish, regions[-1][1]))
        else:
            regions.append((begin, finish))
    return regions


def pauses(power: np.ndarray, options: SpeechFromWords = WORD_SPEECH) -> np.ndarray:
    """Per 10-ms frame of the speech (its power), True in a pause: a run of at least `pause_seconds` of frames
    quieter than the loud level by `pause_db`, less `kept_seconds` at either end."""
    if len(power) == 0:
        return np.zeros(0, dtype=bool)
    decibels = 10 * np.log10(np.maximum(power, 1e-20))
    quiet = decibels < np.quantile(decibels, LOUD_QUANTILE) - options.pause_db
    paused = np.zeros(len(power), dtype=bool)
    shortest, kept = round(options.pause_seconds * FRAMES_PER_SECOND), round(options.kept_seconds * FRAMES_PER_SECOND)
    edges = np.flatnonzero(np.diff(np.concatenate(([0], quiet.astype(np.int8), [0]))))
    for begin, end in zip(edges[::2], edges[1::2]):
        if end - begin >= shortest:
            paused[begin + (kept if begin > 0 else 0):end - (kept if end < len(power) else 0)] = True
    return paused
