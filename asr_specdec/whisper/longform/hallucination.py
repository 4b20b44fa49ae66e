"""openai-whisper's and faster-whisper's `hallucination_silence_threshold`: with word timestamps, a segment whose
words look made up (improbable, or implausibly short or long) and that stands in silence is dropped, and decoding
seeks past the silence before it, so that the next window starts where speech may really begin.

The rule, as both references apply it to a sequential window (after word timestamps are placed):
- a word's anomaly score: +1 if its probability is under 0.15, +(0.133 - duration) * 15 if it lasts under
  0.133 s, +(duration - 2) if it lasts over 2 s; a segment is anomalous when the scores of its first 8 words
  (punctuation left out) add up to 3 or more, or to at least its number of words less 0.01.
- if the window's first segment with words is anomalous and starts more than `threshold` seconds into the
  window, the whole window is dropped and decoding restarts at that segment's start.
- else the first anomalous segment with silence before it (more than `threshold` since the last speech, or it
  starts within `threshold` of the audio's start or within 2 s of the window's start) and silence after it (more
  than `threshold` to the next segment's first word, or the next segment is anomalous too, or it ends within 2 s
  of the window's end) is dropped with every segment after it, and decoding restarts at its start (at least 1 s
  past the window's start), or at the audio's end when it ends within `threshold` of it.

openai-whisper also moves the next window to the end of the window when a window was cut after its last word
with no more than `threshold` seconds left; faster-whisper does not, and neither does this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import OptionError

# faster-whisper's and openai's: a word that is one of these (or a piece of this text) is not scored
PUNCTUATION = "\"'“¿([{-\"'.。,，!！?？:：”)]}、"
SHORT_WORD, LONG_WORD, IMPROBABLE = 0.133, 2.0, 0.15
WORDS_SCORED = 8
NEAR_WINDOW_EDGE = 2.0  # seconds: a segment this close to the window's start or end counts as next to silence


@dataclass(frozen=True)
class Verdict:
    """What the rule does with a window: keep its first `keep` segments (all of them when None) and restart
    decoding at `restart` seconds (None: where the window's own rules say); `drop_window` drops it all."""

    keep: int | None = None
    restart: float | None = None
    drop_window: bool = False


def word_anomaly_score(word) -> float:
    duration = word.end - word.start
    score = 1.0 if word.probability < IMPROBABLE else 0.0
    if duration < SHORT_WORD:
        score += (SHORT_WORD - duration) * 15
    if duration > LONG_WORD:
        score += duration - LONG_WORD
    return score


def is_anomaly(words: Sequence | None) -> bool:
    """Whether a segment with these words looks like a hallucination (False for a segment without words)."""
    if not words:
        return False
    scored = [word for word in words if word.word not in PUNCTUATION][:WORDS_SCORED]
    score = sum(word_anomaly_score(word) for word in scored)
    return score >= 3 or score + 0.01 >= len(scored)


def judge_window(segments: Sequence, offset: float, duration: float, window_end: float, audio_end: float,
                 last_speech: float, threshold: float) -> Verdict:
    """The rule on one window's segments (each with .start, .end and .words in absolute seconds): `offset` is the
    window's start, `duration` how much audio it holds, `window_end` its start plus Whisper's 30 s, `audio_end`
    the audio's length, `last_speech` where the words before this window ended."""
    worded = [index for index, segment in enumerate(segments) if segment.words]
    if not worded:
        return Verdict()
    first = segments[worded[0]]
    if is_anomaly(first.words) and first.start - offset > threshold:
        return Verdict(keep=0, restart=first.start, drop_window=True)
    last_end = last_speech
    for position, index in enumerate(worded):
        segment = segments[index]
        if is_anomaly(segment.words):
            following = segments[worded[position + 1]] if position + 1 < len(worded) else None
            next_start = following.words[0].start if following is not None else offset + duration
            silence_before = (segment.start - last_end > threshold or segment.start < threshold
                              or segment.start - offset < NEAR_WINDOW_EDGE)
            silence_after = (next_start - segment.end > threshold
                             or is_anomaly(following.words if following is not None else None)
                             or window_end - segment.end < NEAR_WINDOW_EDGE)
            if silence_before and silence_after:
                restart = audio_end if audio_end - segment.end < threshold else max(offset + 1, segment.start)
                return Verdict(keep=index, restart=restart)
        last_end = segment.end
    return Verdict()


def check_sequential(sequential: bool) -> None:
    """The rule moves the next window, so it needs Whisper's sequential decoding (its need for words is
    TranscribeOptions'): an error otherwise, rather than an option accepted and ignored."""
    if not sequential:
        raise OptionError("hallucination_silence_threshold", "{hallucination_silence_threshold} applies to "
                                                             "sequential decoding only: not with {vad_filter} or "
                                                             "{long_form=chunked}")
