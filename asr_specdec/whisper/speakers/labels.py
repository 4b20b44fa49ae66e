"""Speakers given to a transcript: each word takes the turn it overlaps most (the nearest one when it falls in
no turn), a segment whose words change speaker is cut where they do, and a segment without words takes the turn
it overlaps most."""

from __future__ import annotations

from dataclasses import replace

from ..io.formats import Segment
from .turns import Turn


def speaker_at(turns: list[Turn], start: float, end: float) -> str | None:
    if not turns:
        return None
    overlaps = [(min(end, turn.end) - max(start, turn.start), turn.speaker) for turn in turns]
    best, speaker = max(overlaps, key=lambda pair: pair[0])
    if best > 0:
        return speaker
    middle = (start + end) / 2
    return min(turns, key=lambda turn: min(abs(middle - turn.start), abs(middle - turn.end))).speaker


def labelled(segments: list[Segment], turns: list[Turn]) -> list[Segment]:
    return [piece for segment in segments for piece in _labelled(segment, turns)]


def _labelled(segment: Segment, turns: list[Turn]) -> list[Segment]:
    if not segment.words:
        return [replace(segment, speaker=speaker_at(turns, segment.start, segment.end))]
    words = [replace(word, speaker=speaker_at(turns, word.start, word.end)) for word in segment.words]
    runs = [[words[0]]]
    for word in words[1:]:
        if word.speaker == runs[-1][-1].speaker:
            runs[-1].append(word)
        else:
            runs.append([word])
    if len(runs) == 1:
        return [replace(segment, words=tuple(words), speaker=words[0].speaker)]
    return [replace(segment, start=segment.start if index == 0 else run[0].start,
                    end=segment.end if index == len(runs) - 1 else run[-1].end,
                    text="".join(word.word for word in run), tokens=tuple(t for word in run for t in word.tokens),
                    words=tuple(run), speaker=run[0].speaker) for index, run in enumerate(runs)]


def all_spoken_by(segments: list[Segment], speaker: str) -> list[Segment]:
    """Every segment and word of one channel given its speaker."""
    return [replace(segment, speaker=speaker, words=tuple(replace(word, speaker=speaker) for word in segment.words))
            for segment in segments]


def without_words(segments: list[Segment]) -> list[Segment]:
    return [replace(segment, words=()) for segment in segments]
