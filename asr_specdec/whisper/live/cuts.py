"""Where a live stream cuts its buffer. Pure functions of the hypothesis's segments (agreement.pieces), its words
aligned to the audio, the audio and where it holds speech (speech.SpeechFrames); `step` is the seconds of one
timestamp step.

- `segment_to_cut`: the last committed segment once the buffer is longer than trim_seconds; past
  max_buffer_seconds the last complete one (before speech the decode skipped).
- `at_quiet_after_last_word`: that segment's end moved back to the quietest 20 ms after its last spoken word
  (Whisper may end a segment well past speech it skipped; cutting there would lose that speech).
- `after_words`: a cut inside a segment, after the words before speech a decode skipped.
- `skipped_head`: the samples at the buffer's start that hold speech its decode skipped.
- `place`: all of it for one update: where (and whether) the buffer is cut after its commit decision.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..io import audio as audio_io
from . import agreement, speech
from .speech import has_letters

# a cut falls at the quietest 20 ms after the last committed word's aligned end, at most this much after it
CUT_SEARCH_SECONDS = 1.5


@dataclass(frozen=True)
class CutRules:
    """A stream's settings for cutting its buffer."""

    step: float  # seconds of one timestamp step
    trim_seconds: float  # past this the buffer is cut at its last committed segment
    max_buffer_seconds: float  # past this at its last complete one, committed or not
    end_of_text: int


@dataclass(frozen=True)
class CutPlan:
    """Where one update cuts its buffer, and what follows from it."""

    cut: agreement.Piece | None  # the buffer is cut at this piece's end (None: not cut there)
    committed: int  # the hypothesis's text tokens committed (a forced cut commits the segments it cuts away)
    head: int | None = None  # the next decode covers only these samples: speech skipped at the buffer's start
    decode_again: bool = False  # cut where the decode skipped speech (or at its head): what is left is decoded again
    skipped: bool = False  # the tentative text follows speech the decode skipped
    whole: bool = False  # the buffer is committed whole and cut away


def place(tokens: list[int], text: list[int], found: list[agreement.Piece], committed: int, heard_end: int | None,
          *, final: bool, head: bool, aligned: list | None, samples: np.ndarray, start: int, buffer_seconds: float,
          frames: speech.SpeechFrames, rules: CutRules) -> CutPlan:
    """The cut of an update whose hypothesis `tokens` (its `text` tokens and segments `found`, its words `aligned`
    to the buffer `samples`, stream sample `start` on, of which its window holds `buffer_seconds`) commits its
    first `committed` text tokens, with `heard_end` text tokens before speech it skipped (None: none; commit.py).
    `final`: the stream's end; `head`: a decode of the speech skipped at a buffer's start, committed whole."""
    full = len(samples) > rules.max_buffer_seconds * audio_io.SAMPLE_RATE
    cut = None if final or head or heard_end == 0 else segment_to_cut(
        found, committed, buffer_seconds, rules.step, rules.trim_seconds, rules.max_buffer_seconds, heard_end)
    if final and heard_end is None and not head and speech.tail_skipped(aligned if text else None, frames, samples,
                                                                        start):
        heard_end = committed = len(text)  # the last decode stopped short of speech: decode the rest again
    at_skip = cut is None and bool(heard_end) and (final or full) and heard_end <= len(text)
    head_samples = None
    if at_skip:  # at the skipped speech: decoded again next
        cut = after_words(tokens, heard_end, aligned, rules.end_of_text, rules.step)
    elif heard_end == 0 and (final or full):  # skipped at the start: that speech alone next, then the rest
        head_samples = skipped_head(aligned, start, len(samples), frames, rules.step)
    whole = head or full and heard_end != 0  # committed whole and cut away
    if cut is not None:
        cut = at_quiet_after_last_word(cut, aligned, samples, start, frames, rules.step)
        committed = max(committed, cut.text_end)  # a forced cut commits the segments it cuts away
    elif whole and text:  # no complete segment in a full buffer: commit it whole and start afresh
        committed = len(text)
    return CutPlan(cut, committed, head_samples, at_skip or head_samples is not None or head and final,
                   heard_end is not None and heard_end < len(text), whole)


def segment_to_cut(found: list[agreement.Piece], committed: int, buffer_seconds: float, step: float,
                   trim_seconds: float, max_buffer_seconds: float, heard_end: int | None = None
                   ) -> agreement.Piece | None:
    """The segment at whose end to cut the buffer, or None (see the module's docstring)."""
    complete = [piece for piece in found
                if piece.end is not None and 0 < piece.end * step <= buffer_seconds
                and (heard_end is None or piece.text_end <= heard_end)]
    if buffer_seconds > trim_seconds:
        settled = [piece for piece in complete if piece.text_end <= committed]
        if settled:
            return settled[-1]
    if buffer_seconds > max_buffer_seconds and complete:
        return complete[-1]
    return None


def at_quiet_after_last_word(piece: agreement.Piece, aligned: list | None, samples: np.ndarray, start: int,
                             frames: speech.SpeechFrames, step: float) -> agreement.Piece:
    """`piece` with its end moved back to the quietest 20 ms between the end of its last spoken word (aligned;
    punctuation after it spans the pause) and the first of: the next spoken word's start, CUT_SEARCH_SECONDS later,
    the next speech after a pause (VAD), the segment's end. `samples` is the decoded buffer, `start` its first
    sample in the stream."""
    if not aligned or piece.end is None:
        return piece
    count, index = 0, -1
    while count < piece.text_end and index + 1 < len(aligned):
        index += 1
        count += len(aligned[index].tokens)
    if count != piece.text_end:  # the words do not end with the piece: keep Whisper's time
        return piece
    spoken = index
    while spoken > 0 and not has_letters(aligned[spoken].word):
        spoken -= 1
    following = next((word.start for word in aligned[index + 1:] if has_letters(word.word)), math.inf)
    rate, step_samples = audio_io.SAMPLE_RATE, round(step * audio_io.SAMPLE_RATE)
    begin = aligned[spoken].end
    finish = min(following, begin + CUT_SEARCH_SECONDS, len(samples) / rate)
    pause = frames.first(start + round(begin * rate), start + round(finish * rate), speech=False)
    if pause is not None:  # stop where speech starts again after the pause that follows the word
        onset = frames.first(pause, start + round(finish * rate))
        if onset is not None:
            finish = (onset - start) / rate
    first, last = math.ceil(begin / step), min(piece.end, math.floor(finish / step))
    if last <= first:  # never after the segment's end: a later aligned end may be DTW's error near the end
        return piece if first >= piece.end else dataclasses.replace(piece, end=max(1, first))
    steps = [samples[k * step_samples:(k + 1) * step_samples] for k in range(first, last + 1)]
    loudness = [float(np.square(frame, dtype=np.float64).mean()) if len(frame) else math.inf for frame in steps]
    return dataclasses.replace(piece, end=max(1, first + int(np.argmin(loudness))))


def after_words(tokens: list[int], text_end: int, aligned: list, end_of_text: int, step: float) -> agreement.Piece:
    """A piece that ends after the first `text_end` text tokens of the hypothesis `tokens`, at the aligned end of
    its last word."""
    count, index = 0, 0
    while count < text_end and index < len(tokens):
        count += tokens[index] < end_of_text
        index += 1
    words, total = 0, 0
    while total < text_end:
        total += len(aligned[words].tokens)
        words += 1
    end = max(1, math.ceil(aligned[words - 1].end / step))
    return agreement.Piece(None, end, (), text_end, index)


def skipped_head(aligned: list, buffer_start: int, buffer_samples: int, frames: speech.SpeechFrames,
                 step: float) -> int:
    """Samples of the buffer that hold the speech its decode skipped at the start: up to the middle of the last
    pause (VAD) before the first word's end, or to that end when no pause follows more speech than a word could
    say."""
    rate = audio_io.SAMPLE_RATE
    end = buffer_start + round(aligned[0].end * rate)
    pause_end = frames.last(buffer_start, end, speech=False)
    pause_start = None if pause_end is None else frames.last(buffer_start, pause_end)
    if pause_start is None or (frames.seconds(buffer_start, pause_start)
                               <= speech.ALLOWANCE_SECONDS + speech.SKIPPED_SECONDS):
        head_end = end
    else:
        head_end = (pause_start + pause_end) // 2
    return min(max(head_end - buffer_start, round(step * rate)), buffer_samples)
