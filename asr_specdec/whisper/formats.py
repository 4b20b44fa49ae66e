"""Transcript segments and their plain-text, SRT and WebVTT renderings (JSON is the CLI's)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    tokens: tuple[int, ...] = ()  # its generated ids (timestamps included) where known


def to_srt(segments: Iterable[Segment]) -> str:
    """SubRip: cues numbered from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`; segments without text are left out."""
    cues = [f"{number}\n{_cue_timing(segment, ',')}\n{text}\n"
            for number, (segment, text) in enumerate(_spoken(segments), start=1)]
    return "\n".join(cues)


def to_vtt(segments: Iterable[Segment]) -> str:
    """WebVTT: a `WEBVTT` header, then `HH:MM:SS.mmm --> HH:MM:SS.mmm` cues; segments without text are left out."""
    cues = [f"{_cue_timing(segment, '.')}\n{text}\n" for segment, text in _spoken(segments)]
    return "\n".join(["WEBVTT\n", *cues])


def to_text(segments: Iterable[Segment]) -> str:
    return " ".join(text.replace("\n", " ") for _, text in _spoken(segments))


def _spoken(segments: Iterable[Segment]) -> list[tuple[Segment, str]]:
    """(segment, cue text) for segments with text; blank lines are dropped since they would end a cue."""
    spoken = []
    for segment in segments:
        text = "\n".join(line.strip() for line in segment.text.splitlines() if line.strip())
        if text:
            spoken.append((segment, text))
    return spoken


def _cue_timing(segment: Segment, decimal_mark: str) -> str:
    return f"{_timestamp(segment.start, decimal_mark)} --> {_timestamp(segment.end, decimal_mark)}"


def _timestamp(seconds: float, decimal_mark: str) -> str:
    # whole milliseconds first, so 59.9996 s becomes 00:01:00.000 rather than 00:00:59.1000
    milliseconds = max(0, round(seconds * 1000))
    hours, milliseconds = divmod(milliseconds, 3_600_000)
    minutes, milliseconds = divmod(milliseconds, 60_000)
    whole_seconds, milliseconds = divmod(milliseconds, 1000)
    return f"{hours:02d}:{minutes:02d}:{whole_seconds:02d}{decimal_mark}{milliseconds:03d}"
