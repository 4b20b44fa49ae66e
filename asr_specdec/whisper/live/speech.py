"""Where a live stream's audio holds speech (Silero VAD), and which words of a decode hold more speech than they
could say: speech the decode skipped.

Whisper sometimes leaves an utterance out of a buffer it decodes (a short one after a long one, most often), and
goes on with the words after it. Its words aligned to the audio (cross-attention and dynamic time warping, as
word timestamps are) are contiguous, so the skipped speech lands inside the span of the word before or after it:
a "." that lasts 2 s, or an "And" that starts 3 s before its own sound; speech skipped at the very start of
the buffer lands in the first word's span, counted from the buffer's start. A word whose span holds more speech than
`ALLOWANCE_SECONDS + LETTER_SECONDS` per letter by over `SKIPPED_SECONDS` marks the place: the stream commits
nothing from there on and never cuts the buffer past it, so that the skipped speech is decoded again in a later
buffer instead of being lost.
"""

from __future__ import annotations

import numpy as np
import torch

from ..io.audio import SAMPLE_RATE

FRAME_SAMPLES = 512  # Silero's frame at 16 kHz (32 ms)
SPEECH_PROBABILITY = 0.5  # a frame is speech above this (Silero's default threshold)
ALLOWANCE_SECONDS = 0.3  # speech any word's span may hold (alignment is coarse)...
LETTER_SECONDS = 0.1  # ...plus this per letter or digit of the word
SKIPPED_SECONDS = 0.5  # more speech than the allowance by this much: the decode skipped speech there


class SpeechFrames:
    """Silero's speech probability of every 32-ms frame of a stream's audio (frames counted from the stream's
    start), computed the first time they are asked for, with a VAD model of the stream's own (its recurrent
    state follows the stream)."""

    def __init__(self):
        self._model = None
        self._first = 0  # frame index of probabilities[0]
        self._probabilities = np.zeros(0, dtype=np.float32)

    @property
    def _next(self) -> int:
        return self._first + len(self._probabilities)

    def update(self, samples: np.ndarray, start: int) -> None:
        """Compute the frames of `samples` (audio from stream sample `start`) not computed yet. Audio before
        `start` that was never computed is gone: the state starts afresh at `start`'s first whole frame."""
        end = (start + len(samples)) // FRAME_SAMPLES
        if self._next * FRAME_SAMPLES < start:
            if self._model is not None:
                self._model.reset_states()
            self._first, self._probabilities = -(-start // FRAME_SAMPLES), np.zeros(0, dtype=np.float32)
        if end <= self._next:
            return
        if self._model is None:
            from ..longform.vad import new_silero_model

            self._model = new_silero_model()
        offset = self._next * FRAME_SAMPLES - start
        chunk = torch.from_numpy(np.ascontiguousarray(samples[offset:offset + (end - self._next) * FRAME_SAMPLES]))
        new = [float(self._model(frame, SAMPLE_RATE)) for frame in chunk.reshape(-1, FRAME_SAMPLES)]
        self._probabilities = np.concatenate([self._probabilities, np.asarray(new, dtype=np.float32)])

    def forget_before(self, sample: int) -> None:
        """Drop the frames that end before stream sample `sample` (audio cut from the buffer)."""
        count = min(max(0, sample // FRAME_SAMPLES - self._first), len(self._probabilities))
        self._probabilities = self._probabilities[count:]
        self._first += count

    def seconds(self, begin: int, end: int) -> float:
        """Seconds of speech among the computed frames whose middle lies in stream samples [begin, end)."""
        first = max(self._first, -(-(begin - FRAME_SAMPLES // 2) // FRAME_SAMPLES))
        last = min(self._next, -(-(end - FRAME_SAMPLES // 2) // FRAME_SAMPLES))
        if last <= first:
            return 0.0
        speech = self._probabilities[first - self._first:last - self._first] > SPEECH_PROBABILITY
        return float(speech.sum()) * FRAME_SAMPLES / SAMPLE_RATE

    def first(self, begin: int, end: int, speech: bool = True) -> int | None:
        """The stream sample where the first computed speech frame (`speech=False`: non-speech frame) in stream
        samples [begin, end) starts, or None."""
        found = self._frames(begin, end, speech)
        return None if found is None else int(found[0]) * FRAME_SAMPLES

    def last(self, begin: int, end: int, speech: bool = True) -> int | None:
        """The stream sample where the last computed speech frame (`speech=False`: non-speech frame) in stream
        samples [begin, end) ends, or None."""
        found = self._frames(begin, end, speech)
        return None if found is None else (int(found[-1]) + 1) * FRAME_SAMPLES

    def _frames(self, begin: int, end: int, speech: bool) -> np.ndarray | None:
        """Stream frame numbers of the computed speech (or non-speech) frames wholly in samples [begin, end)."""
        first = max(self._first, -(-begin // FRAME_SAMPLES))
        last = min(self._next, end // FRAME_SAMPLES)
        if last <= first:
            return None
        flags = self._probabilities[first - self._first:last - self._first] > SPEECH_PROBABILITY
        found = np.flatnonzero(flags == speech)
        return first + found if len(found) else None


def skipped_at(words: list, speech_seconds, from_start: bool = True) -> int | None:
    """The index of the first word (AlignedWord: text and start/end seconds in the buffer) whose span holds
    speech it could not have said, or None. `speech_seconds(start, end)` gives the speech in a span of the
    buffer. The first word's span is taken from the buffer's start (`from_start`; else it is never the place):
    0 means the decode began after speech at the very start of its buffer."""
    for index, word in enumerate(words):
        begin = 0.0 if index == 0 else word.start
        if index == 0 and not from_start or word.end <= begin:
            continue
        letters = sum(character.isalnum() for character in word.word)
        allowance = ALLOWANCE_SECONDS + LETTER_SECONDS * letters
        if speech_seconds(begin, word.end) > allowance + SKIPPED_SECONDS:
            return index
    return None


def has_letters(word: str) -> bool:
    return any(character.isalnum() for character in word)


def heard_end(aligned: list | None, frames: SpeechFrames, samples: np.ndarray, start: int,
              from_start: bool) -> int | None:
    """Text tokens of a hypothesis (its words `aligned` to the buffer `samples`, stream sample `start` on) before
    the first word whose span holds speech the decode skipped (punctuation that spans it counts as before), or None
    when it skipped none (or nothing is aligned). `from_start`: the buffer begins with no committed words, so the
    first word's span counts from its start (0: the decode skipped speech at the very start)."""
    if not aligned or len(aligned) < 2 and not from_start:
        return None
    frames.update(samples, start)
    at = skipped_at(aligned, lambda begin, end: frames.seconds(start + round(begin * SAMPLE_RATE),
                                                               start + round(end * SAMPLE_RATE)), from_start)
    if at is None:
        return None
    if at and not has_letters(aligned[at].word):  # "." spans the skipped speech: it may be committed
        at += 1
    return sum(len(word.tokens) for word in aligned[:at])


def tail_skipped(aligned: list | None, frames: SpeechFrames, samples: np.ndarray, start: int) -> bool:
    """Whether the buffer holds more speech after the hypothesis's last word than a word could say (the decode
    stopped short of it)."""
    if not aligned:
        return False
    frames.update(samples, start)
    after = frames.seconds(start + round(aligned[-1].end * SAMPLE_RATE), start + len(samples))
    return after > ALLOWANCE_SECONDS + SKIPPED_SECONDS
