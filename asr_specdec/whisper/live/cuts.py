"""Where a live stream cuts its buffer. Pure functions of the hypothesis's segments (agreement.pieces), its words
aligned to the audio, the audio and where it holds speech (speech.SpeechFrames); `step` is the seconds of one
timestamp step.

- `segment_to_cut`: the last committed segment once the buffer is longer than trim_seconds; past
  max_buffer_seconds the last complete one (before speech the decode skipped).
- `at_quiet_after_last_word`: that segment's end moved back to the quietest 20 ms after its last spoken word
  (Whisper may end a segment well past speech it skipped; cutting there would lose that speech).
- `after_words`: a cut inside a segment, after the words before speech a decode skipped.
- `skipped_head`: the samples at the buffer's start that hold speech its decode skipped.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..io import audio as audio_io
from . import agreement, speech

# a cut falls at the quietest 20 ms after the last committed word's aligned end, at most this much after it
CUT_SEARCH_SECONDS = 1.5


def has_letters(word: str) -> bool:
    return any(character.isalnum() for character in word)


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
