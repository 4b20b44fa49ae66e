"""faster-whisper's VAD timeline: the speech regions are joined into one audio and decoded as such; a time on the
joined audio maps back to the original by adding the silence removed before the region it falls in (a word by its
middle, so that its two ends land in one region; a segment's end, on a region's last sample, in that region)."""

from __future__ import annotations

import bisect
from dataclasses import replace

from ..whisper.io.audio import SAMPLE_RATE
from .types import Segment


class SpeechTimeline:
    def __init__(self, regions: list[tuple[int, int]]):
        self.region_ends: list[int] = []  # each region's end, in samples of the joined audio
        self.silence_before: list[float] = []  # seconds removed before each region
        removed, previous_end = 0, 0
        for start, end in regions:
            removed += start - previous_end
            previous_end = end
            self.region_ends.append(end - removed)
            self.silence_before.append(removed / SAMPLE_RATE)

    def region(self, time: float, is_end: bool = False) -> int:
        sample = int(time * SAMPLE_RATE)
        if is_end and sample in self.region_ends:
            return self.region_ends.index(sample)
        return min(bisect.bisect(self.region_ends, sample), len(self.region_ends) - 1)

    def original(self, time: float, region: int | None = None, is_end: bool = False) -> float:
        region = self.region(time, is_end) if region is None else region
        return round(self.silence_before[region] + time, 2)

    def restore(self, segment: Segment) -> Segment:
        if segment.words:
            words = []
            for word in segment.words:
                region = self.region((word.start + word.end) / 2)
                words.append(replace(word, start=self.original(word.start, region),
                                     end=self.original(word.end, region)))
            return replace(segment, start=words[0].start, end=words[-1].end, words=words)
        return replace(segment, start=self.original(segment.start), end=self.original(segment.end, is_end=True))


def joined_chunks(lengths: list[int], seconds: float) -> list[tuple[float, float]]:
    """faster-whisper's collect_chunks for its batched pipeline: consecutive speech regions (`lengths` in samples)
    joined into chunks of at most `seconds`, as (start, end) seconds of the joined speech."""
    chunks, begin, size = [], 0, 0
    for length in lengths:
        if size + length > seconds * SAMPLE_RATE:
            chunks.append((begin, begin + size))
            begin, size = begin + size, 0
        size += length
    chunks.append((begin, begin + size))
    return [(start / SAMPLE_RATE, end / SAMPLE_RATE) for start, end in chunks if end > start]
