"""Aligned words (alignment.py) placed in a window's segments, with the clean-ups faster-whisper and openai apply:
overlong words at sentence ends shortened, punctuation merged into its word, and each segment's start and end
moved to its first and last word (unless that word is itself implausibly long).

The constants and thresholds are openai-whisper's and faster-whisper's defaults, so word times can be compared
with theirs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .alignment import AlignedWord

PREPEND_PUNCTUATIONS = "\"'“¿([{-"
APPEND_PUNCTUATIONS = "\"'.。,，!！?？:：”)]}、"
SENTENCE_END_MARKS = ".。!！?？"
LONGEST_MEDIAN_WORD = 0.7  # seconds: the median word duration used for the clean-ups is capped here


@dataclass(frozen=True)
class Word:
    word: str
    start: float
    end: float
    probability: float
    tokens: tuple[int, ...] = field(default=(), compare=False, repr=False)
    speaker: str | None = None  # who spoke it, when diarized (speakers/)

    def as_dict(self) -> dict:
        record = {"word": self.word, "start": self.start, "end": self.end, "probability": round(self.probability, 4)}
        return record | ({"speaker": self.speaker} if self.speaker is not None else {})


@dataclass(frozen=True)
class WordedSegment:
    start: float
    end: float
    words: tuple[Word, ...]


def merge_punctuation(words: list[AlignedWord], prepend: str = PREPEND_PUNCTUATIONS,
                      append: str = APPEND_PUNCTUATIONS) -> list[AlignedWord]:
    """Opening punctuation joins the word after it, closing punctuation the word before; the emptied entries stay
    (with no text and no tokens) so that token counts still line up."""
    words = [replace(word, tokens=list(word.tokens)) for word in words]
    following = len(words) - 1
    for index in range(len(words) - 2, -1, -1):
        word = words[index]
        if word.word.startswith(" ") and word.word.strip() in prepend:
            words[following].word = word.word + words[following].word
            words[following].tokens = word.tokens + words[following].tokens
            word.word, word.tokens = "", []
        else:
            following = index
    previous = 0
    for index in range(1, len(words)):
        word = words[index]
        if not words[previous].word.endswith(" ") and word.word in append:
            words[previous].word += word.word
            words[previous].tokens = words[previous].tokens + word.tokens
            word.word, word.tokens = "", []
        else:
            previous = index
    return words


def place_words(segments: list[tuple[float, float, int]], aligned: list[AlignedWord], offset: float,
                last_speech: float, prepend: str = PREPEND_PUNCTUATIONS, append: str = APPEND_PUNCTUATIONS
                ) -> tuple[list[WordedSegment], float]:
    """Words for each segment of one window: `segments` are (start, end, text-token count) in absolute seconds,
    `aligned` the window's words (times from the window start at `offset`), `last_speech` where speech last
    ended before this window. Returns the segments with words and refined bounds, and the new last speech end."""
    aligned = [replace(word) for word in aligned]
    durations = np.array([word.end - word.start for word in aligned])
    durations = durations[durations.nonzero()]
    median = min(LONGEST_MEDIAN_WORD, float(np.median(durations))) if len(durations) else 0.0
    longest = median * 2
    if len(durations):
        for index in range(1, len(aligned)):
            word = aligned[index]
            if word.end - word.start > longest:
                if word.word in SENTENCE_END_MARKS:
                    word.end = word.start + longest
                elif aligned[index - 1].word in SENTENCE_END_MARKS:
                    word.start = word.end - longest
    aligned = merge_punctuation(aligned, prepend, append)

    placed, index = [], 0
    for start, end, text_tokens in segments:
        words, counted = [], 0
        while index < len(aligned) and counted < text_tokens:
            timing = aligned[index]
            if timing.word:
                words.append(Word(timing.word, round(offset + timing.start, 2), round(offset + timing.end, 2),
                                  timing.probability, tuple(timing.tokens)))
            counted += len(timing.tokens)
            index += 1
        if words:
            words, start, end = _refine(words, start, end, last_speech, median, longest)
            last_speech = end
        placed.append(WordedSegment(start, end, tuple(words)))
    return placed, last_speech


def _refine(words: list[Word], start: float, end: float, last_speech: float, median: float, longest: float
            ) -> tuple[list[Word], float, float]:
    """Segment bounds from its words, and its first words shortened when they follow a pause and look stretched."""
    first = words[0]
    after_pause = first.end - last_speech > median * 4
    if after_pause and (first.end - first.start > longest
                        or (len(words) > 1 and words[1].end - first.start > longest * 2)):
        if len(words) > 1 and words[1].end - words[1].start > longest:
            boundary = max(words[1].end / 2, words[1].end - longest)
            first = replace(first, end=boundary)
            words[1] = replace(words[1], start=boundary)
        first = replace(first, start=max(0.0, first.end - longest))
    words[0] = first
    # keep the segment's own start (and shorten the word) when the first word is implausibly long
    own_start = start < first.end and start - 0.5 > first.start
    if own_start:
        words[0] = replace(first, start=max(0.0, min(first.end - median, start)))
    last = words[-1]
    own_end = end > last.start and end + 0.5 < last.end
    if own_end:
        words[-1] = replace(last, end=max(last.start + median, end))
    words = [replace(word, start=round(word.start, 2), end=round(word.end, 2)) for word in words]
    return words, start if own_start else words[0].start, end if own_end else words[-1].end
