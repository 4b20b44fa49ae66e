"""Whisper's sequential long-form transcription (openai/whisper's `transcribe`, transformers' long-form
`generate`): decode a 30-second window with timestamps, keep its complete segments, move the window to the
end of the last complete one, repeat.

A window's tokens read `<|t0|> text <|t1|><|t1|> text <|t2|>...`; two timestamps in a row close a segment
and open the next. When the window ends with a single timestamp after text, everything up to it was
heard: the next window starts after this one. Otherwise the text after the last pair may be a word cut by
the window's edge, so it is dropped and the next window starts at that pair. A window with no pair at all
is one segment. Optionally each window is conditioned on the tokens of the segments before it
(<|startofprev|> prompt), as both references do.

This module knows nothing about models: `decode(window_features, previous_tokens)` returns a window's
generated tokens (or a WindowOutcome: tokens, whether the window was judged silent and is skipped, whether
conditioning restarts after it, and its aligned words), so plain and speculative decoding share every line of
the seeking logic. With words, a window's segments are refined by them and, as faster-whisper does, the next
window starts at the last word's end unless the window ended on a single timestamp.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F

from ..runtime.frames import Frames
from .hallucination import judge_window


@dataclass(frozen=True)
class TimedTokens:
    """One segment of a window: absolute start/end seconds and its tokens (timestamps included)."""

    start: float
    end: float
    tokens: tuple[int, ...]
    window: int = 0  # index of the decoded window it came from (LongFormOutput.window_tokens)
    words: tuple = ()  # words.Word, when decoded with word timestamps


@dataclass
class WindowOutcome:
    """What a window decoder may say besides its tokens."""

    tokens: list[int]
    skip: bool = False  # judged silent: no segments, the next window starts after this one
    reset_prompt: bool = False  # later windows are not conditioned on the text so far
    words: list | None = None  # alignment.AlignedWord of its complete segments, times from the window start


@dataclass
class LongFormOutput:
    segments: list[TimedTokens] = field(default_factory=list)
    window_tokens: list[list[int]] = field(default_factory=list)  # generated ids per decoded window
    window_offsets: list[float] = field(default_factory=list)  # start of each decoded window, seconds


def window_segments(tokens: list[int], timestamp_begin: int, end_of_text: int, offset_frames: int,
                    window_frames: int, frames: Frames) -> tuple[list[TimedTokens], int]:
    """(segments, frames to advance) for one window's generated tokens, as transformers' `_retrieve_segment`.

    `window_frames` is how many real frames the window held (less than frames.window at the end). The last
    segment of a window cut after a pair keeps the pair's second timestamp, as transformers keeps it.
    """
    if tokens and tokens[-1] == end_of_text:
        tokens = tokens[:-1]
    offset = offset_frames * frames.seconds
    step = frames.timestamp_seconds
    is_timestamp = [token >= timestamp_begin for token in tokens]
    single_timestamp_ending = is_timestamp[-2:] == [False, True]
    pair_ends = [index + 1 for index in range(len(tokens) - 1) if is_timestamp[index] and is_timestamp[index + 1]]
    if not pair_ends:
        stamps = [token for token, stamp in zip(tokens, is_timestamp) if stamp]
        duration = window_frames * frames.seconds
        if stamps and stamps[-1] != timestamp_begin:
            duration = (stamps[-1] - timestamp_begin) * step
        return [TimedTokens(offset, offset + duration, tuple(tokens))], window_frames

    slices = list(pair_ends)
    if single_timestamp_ending:
        slices.append(len(tokens))
    else:
        slices[-1] += 1
    segments, begin = [], 0
    for number, end in enumerate(slices):
        piece = tokens[begin:end]
        closing = piece[-1] if number < len(slices) - 1 or single_timestamp_ending else piece[-2]
        segments.append(TimedTokens(offset + (piece[0] - timestamp_begin) * step,
                                    offset + (closing - timestamp_begin) * step, tuple(piece)))
        begin = end
    if single_timestamp_ending:
        return segments, window_frames
    return segments, (tokens[begin - 2] - timestamp_begin) * frames.per_timestamp


def chunk_segments(tokens: list[int], timestamp_begin: int, end_of_text: int, offset: float, duration: float,
                   frames: Frames) -> list[TimedTokens]:
    """Segments of a window that is never decoded again (the chunked mode): every piece between pairs is
    kept, and one with no closing timestamp ends where the window ends. Times past the window's audio (the
    model may place timestamps in its silent padding) are clipped to its end, so that windows never overlap."""
    if tokens and tokens[-1] == end_of_text:
        tokens = tokens[:-1]
    step = frames.timestamp_seconds
    starts = [0] + [index for index in range(1, len(tokens))
                    if tokens[index - 1] >= timestamp_begin and tokens[index] >= timestamp_begin]
    segments = []
    for begin, end in zip(starts, starts[1:] + [len(tokens)]):
        piece = tokens[begin:end]
        if not piece:
            continue
        first, last = piece[0], piece[-1]
        start = (first - timestamp_begin) * step if first >= timestamp_begin else 0.0
        end = (last - timestamp_begin) * step if len(piece) > 1 and last >= timestamp_begin else duration
        segments.append(TimedTokens(offset + min(start, duration), offset + min(end, duration), tuple(piece)))
    return segments


def batched_segments(tokens: list[int], timestamp_begin: int, end_of_text: int, offset: float, duration: float,
                     frames: Frames) -> list[TimedTokens]:
    """Segments of a window that is never decoded again, as faster-whisper's batched pipeline splits one: every
    piece between pairs of timestamps, a last piece without its closing timestamp dropped (unless the window ends
    on a single timestamp); with no pair, the whole window one segment from its start to its last timestamp (or
    its end)."""
    if tokens and tokens[-1] == end_of_text:
        tokens = tokens[:-1]
    step = frames.timestamp_seconds
    cuts = [index for index in range(1, len(tokens))
            if tokens[index - 1] >= timestamp_begin and tokens[index] >= timestamp_begin]
    if not cuts:
        stamps = [token for token in tokens if token >= timestamp_begin]
        end = (stamps[-1] - timestamp_begin) * step if stamps and stamps[-1] != timestamp_begin else duration
        return [TimedTokens(offset, offset + end, tuple(tokens))]
    if len(tokens) >= 2 and tokens[-2] < timestamp_begin <= tokens[-1]:  # no speech after its last timestamp
        cuts.append(len(tokens))
    segments = []
    for begin, end in zip([0] + cuts, cuts):
        piece = tokens[begin:end]
        segments.append(TimedTokens(offset + (piece[0] - timestamp_begin) * step,
                                    offset + (piece[-1] - timestamp_begin) * step, tuple(piece)))
    return segments


def previous_tokens(segments: list[TimedTokens], timestamp_begin: int) -> list[int]:
    """The conditioning text: every segment's tokens, a segment's trailing second timestamp left out."""
    tokens: list[int] = []
    for segment in segments:
        piece = segment.tokens
        if len(piece) > 2 and piece[-2] >= timestamp_begin:
            piece = piece[:-1]
        tokens.extend(piece)
    return tokens


def window_features(features: torch.Tensor, seek: int, frames: Frames) -> tuple[torch.Tensor, int]:
    """(features of the window starting at frame `seek`, zero-padded to the encoder's input; real frames in it)."""
    window = features[..., seek: seek + frames.window]
    real = window.shape[-1]
    if real < frames.padded:
        window = F.pad(window, (0, frames.padded - real))
    return window, real


def text_token_count(tokens: tuple[int, ...] | list[int], end_of_text: int) -> int:
    return sum(1 for token in tokens if token < end_of_text)


def complete_text_tokens(tokens: list[int], timestamp_begin: int, end_of_text: int) -> list[int]:
    """The text tokens of the segments window_segments keeps from a sequential window (for word alignment)."""
    segments, _ = window_segments(tokens, timestamp_begin, end_of_text, 0, 1, Frames())
    return [token for segment in segments for token in segment.tokens if token < end_of_text]


def seek_text_tokens(tokens: list[int], timestamp_begin: int, end_of_text: int) -> list[int]:
    """The text tokens to align when words serve only to place the next window's start: those of the kept segments
    of a window the next one starts inside (it closed a pair and did not end on a single timestamp), none
    otherwise (the next window starts after this one: nothing to align)."""
    body = tokens[:-1] if tokens and tokens[-1] == end_of_text else tokens
    is_timestamp = [token >= timestamp_begin for token in body]
    has_pair = any(first and second for first, second in zip(is_timestamp, is_timestamp[1:]))
    if not has_pair or is_timestamp[-2:] == [False, True]:
        return []
    return complete_text_tokens(tokens, timestamp_begin, end_of_text)


def transcribe_sequential(
    features: torch.Tensor,
    decode: Callable[[torch.Tensor, list[int] | None], list[int] | WindowOutcome],
    timestamp_begin: int,
    end_of_text: int,
    frames: Frames = Frames(),
    condition_on_previous_text: bool = False,
    progress: Callable[[float, str], None] | None = None,
    initial_prompt: list[int] | None = None,
    place_words: Callable | None = None,
    with_frames: bool = False,
    on_segments: Callable[[list[TimedTokens]], None] | None = None,
    audio_seconds: float | None = None,
    hallucination_silence_threshold: float | None = None,
    keep_words: bool = True,
) -> LongFormOutput:
    """Seek through `features` [batch 1, mel bins, frames], one decoded window at a time.

    `initial_prompt` conditions the first window (and, with conditioning, the next ones until a reset), as
    openai's; `place_words(segments, words, offset, last_speech)` is words.place_words; `with_frames` passes
    decode the number of real (unpadded) frames of the window as a third argument; `on_segments` gets each
    window's segments as soon as they are final; `audio_seconds` is the length the progress text names (the
    features of audio under 30 s are padded to a whole window); `hallucination_silence_threshold` (with words)
    drops a hallucinated segment that stands in silence and seeks past the silence (hallucination.py).

    `keep_words=False`: a window's words only move the next window's start back to the end of its last word
    (seek_text_tokens), its segments keep their token times (an end past that start is cut to it). The model's
    closing timestamp of a window's last kept segment may fall inside the first word of the next utterance
    (the 64-s joined clips: "he was.<|28.64|><|28.64|>" where "He" starts at 28.3 s); seeking to it cuts that
    word in half and the next window drops it. The last word's end, from the alignment, does not."""
    total = features.shape[-1]
    seconds = total * frames.seconds if audio_seconds is None else audio_seconds
    output = LongFormOutput()
    seek = 0
    context = list(initial_prompt or [])  # every token windows may be conditioned on, the initial prompt first
    context_since, last_speech = 0, 0.0
    while seek < total:
        if progress is not None:
            progress(seek / total, f"transcribing from {seek * frames.seconds:.1f} s of {seconds:.1f} s")
        window, real = window_features(features, seek, frames)
        previous = context[context_since:] or None
        outcome = decode(window, previous, real) if with_frames else decode(window, previous)
        outcome = outcome if isinstance(outcome, WindowOutcome) else WindowOutcome(outcome)
        tokens = outcome.tokens
        output.window_tokens.append(tokens)
        output.window_offsets.append(seek * frames.seconds)
        if outcome.skip:
            seek += real
            continue
        segments, advance = window_segments(tokens, timestamp_begin, end_of_text, seek, real, frames)
        number = len(output.window_tokens) - 1
        segments = [replace(segment, window=number) for segment in segments]
        if place_words is not None and outcome.words is not None and not keep_words:
            _, _, word_seek = _with_words(segments, outcome.words, tokens, seek, frames, last_speech, place_words,
                                          timestamp_begin, end_of_text)
            if word_seek is not None and seek < word_seek < seek + advance:
                advance = word_seek - seek
                segments = _ending_by(segments, word_seek * frames.seconds)
        elif place_words is not None and outcome.words is not None:
            speech_before = last_speech
            segments, last_speech, word_seek = _with_words(segments, outcome.words, tokens, seek, frames, last_speech,
                                                           place_words, timestamp_begin, end_of_text)
            advance = word_seek - seek if word_seek is not None and word_seek > seek else advance
            if hallucination_silence_threshold is not None:
                offset = seek * frames.seconds
                verdict = judge_window(segments, offset, min(real * frames.seconds, seconds - offset),
                                       offset + frames.window * frames.seconds, seconds, speech_before,
                                       hallucination_silence_threshold)
                restart = None if verdict.restart is None else max(1, _frame(verdict.restart, seconds, total,
                                                                             frames) - seek)
                if verdict.drop_window:  # a hallucination after silence opens the window: decode from it
                    seek, last_speech = seek + restart, speech_before
                    continue
                if verdict.keep is not None:
                    segments, advance = segments[:verdict.keep], restart
                    last_speech = _last_word_end(segments, speech_before)
        output.segments.extend(segments)
        context.extend(previous_tokens(segments, timestamp_begin))
        if not condition_on_previous_text or outcome.reset_prompt:
            context_since = len(context)
        if on_segments is not None:
            on_segments(segments)
        seek += advance if advance > 0 else real  # a complete segment always ends after 0, but never loop
    return output


def _ending_by(segments: list[TimedTokens], time: float) -> list[TimedTokens]:
    return [replace(segment, start=min(segment.start, time), end=min(segment.end, time)) for segment in segments]


def _last_word_end(segments: list[TimedTokens], default: float) -> float:
    ends = [word.end for segment in segments for word in segment.words]
    return ends[-1] if ends else default


def _frame(time: float, seconds: float, total: int, frames: Frames) -> int:
    """The feature frame at `time` seconds; the audio's end (`seconds` long) is the last frame, `total`."""
    return total if time >= seconds else round(time / frames.seconds)


def _with_words(segments: list[TimedTokens], words: list, tokens: list[int], seek: int, frames: Frames,
                last_speech: float, place_words: Callable, timestamp_begin: int, end_of_text: int):
    """(segments with words and refined bounds, last speech end, the frame the next window starts at or None)."""
    offset = seek * frames.seconds
    bounds = [(segment.start, segment.end, text_token_count(segment.tokens, end_of_text)) for segment in segments]
    placed, last_speech = place_words(bounds, words, offset, last_speech)
    segments = [replace(segment, start=worded.start, end=worded.end, words=worded.words)
                for segment, worded in zip(segments, placed)]
    body = tokens[:-1] if tokens and tokens[-1] == end_of_text else tokens
    single_timestamp_ending = len(body) >= 2 and body[-2] < timestamp_begin <= body[-1]
    ends = [word.end for segment in segments for word in segment.words]
    if single_timestamp_ending or not ends or ends[-1] <= offset:
        return segments, last_speech, None
    return segments, last_speech, round(ends[-1] / frames.seconds)
