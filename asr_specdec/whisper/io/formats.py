"""Transcript segments and their plain-text, SRT and WebVTT renderings (JSON: records.py).

With word timestamps, subtitles may have one cue per word (`word_cues="each"`) or, as openai's
`--highlight_words`, one cue per word showing its whole segment with that word underlined ("highlight").
Diarized segments carry their speaker: SRT cues begin `[SPEAKER_00] `, WebVTT cues are voice spans
(`<v SPEAKER_00>`), and plain text starts a new `[SPEAKER_00]` line at each change of speaker.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

WORD_CUES = ("segment", "each", "highlight")


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    text: str
    tokens: tuple[int, ...] = ()  # its generated ids (timestamps included) where known
    words: tuple = ()  # words.Word, with word timestamps
    # how the window holding it was judged (fallback.py): None when it was not scored
    avg_logprob: float | None = None
    compression_ratio: float | None = None
    no_speech_prob: float | None = None
    temperature: float | None = None
    speaker: str | None = None  # who spoke it, when diarized (speakers/)


def to_srt(segments: Iterable[Segment], word_cues: str = "segment") -> str:
    """SubRip: cues numbered from 1, `HH:MM:SS,mmm --> HH:MM:SS,mmm`; segments without text are left out."""
    cues = [f"{number}\n{_cue_timing(segment, ',')}\n{_voiced(segment, text, '[{}] ')}\n"
            for number, (segment, text) in enumerate(_cues(segments, word_cues), start=1)]
    return "\n".join(cues)


def to_vtt(segments: Iterable[Segment], word_cues: str = "segment") -> str:
    """WebVTT: a `WEBVTT` header, then `HH:MM:SS.mmm --> HH:MM:SS.mmm` cues; segments without text are left out."""
    cues = [f"{_cue_timing(segment, '.')}\n{_voiced(segment, text, '<v {}>')}\n"
            for segment, text in _cues(segments, word_cues)]
    return "\n".join(["WEBVTT\n", *cues])


def _cues(segments: Iterable[Segment], word_cues: str) -> list[tuple[Segment, str]]:
    """(timing, cue text) per cue: a segment each, or a word each (segments without words stay whole)."""
    if word_cues not in WORD_CUES:
        raise ValueError(f"unknown word cue style '{word_cues}': choose one of {', '.join(WORD_CUES)}")
    spoken = _spoken(segments)
    if word_cues == "segment":
        return spoken
    cues = []
    for segment, text in spoken:
        words = [word for word in segment.words if word.word.strip()]
        if not words:
            cues.append((segment, text))
            continue
        for index, word in enumerate(words):
            cue = word.word.strip() if word_cues == "each" else _highlighted(words, index)
            cues.append((Segment(word.start, word.end, cue, speaker=getattr(word, "speaker", None)), cue))
    return cues


def _highlighted(words: list, index: int) -> str:
    """The words of a segment, spaced as spoken, with word `index` underlined."""
    pieces = []
    for position, word in enumerate(words):
        spacing = word.word[: len(word.word) - len(word.word.lstrip())]
        text = word.word.strip()
        pieces.append(spacing + (f"<u>{text}</u>" if position == index else text))
    return "".join(pieces).strip()


def to_text(segments: Iterable[Segment]) -> str:
    spoken = _spoken(segments)
    if all(segment.speaker is None for segment, _ in spoken):
        return " ".join(text.replace("\n", " ") for _, text in spoken)
    lines: list[tuple[str | None, list[str]]] = []
    for segment, text in spoken:
        if not lines or lines[-1][0] != segment.speaker:
            lines.append((segment.speaker, []))
        lines[-1][1].append(text.replace("\n", " "))
    return "\n".join(_voiced(Segment(0, 0, "", speaker=speaker), " ".join(texts), "[{}] ") for speaker, texts in lines)


def _voiced(segment: Segment, text: str, mark: str) -> str:
    """A cue's text preceded by its speaker's mark (`mark` with the label in it), when it has a speaker."""
    return text if segment.speaker is None else mark.format(segment.speaker) + text


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
