"""Segments of windows decoded independently of each other (quiet-point chunks, VAD speech windows), with their
words when the window was aligned: every piece of such a window is kept (longform.chunk_segments)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..runtime.frames import Frames
from .sequential import TimedTokens, chunk_segments, text_token_count


def independent_segments(tokens: list[int], window: int, offset: float, duration: float, timestamps: bool,
                         timestamp_begin: int, end_of_text: int, frames: Frames, words: list | None = None,
                         place_words: Callable | None = None, last_speech: float = 0.0
                         ) -> tuple[list[TimedTokens], float]:
    """(segments of window number `window`, starting at `offset` s and `duration` s long, where speech last ended)."""
    if timestamps:
        segments = chunk_segments(tokens, timestamp_begin, end_of_text, offset, duration, frames)
    else:
        body = tokens[:-1] if tokens and tokens[-1] == end_of_text else tokens
        segments = [TimedTokens(offset, offset + duration, tuple(body))]
    segments = [replace(segment, window=window) for segment in segments]
    if words is None or place_words is None:
        return segments, last_speech
    bounds = [(segment.start, segment.end, text_token_count(segment.tokens, end_of_text)) for segment in segments]
    placed, last_speech = place_words(bounds, words, offset, last_speech)
    return [replace(segment, start=worded.start, end=worded.end, words=worded.words)
            for segment, worded in zip(segments, placed)], last_speech


def window_text_tokens(end_of_text: int) -> Callable[[list[int]], list[int]]:
    """For Window.word_tokens: every text token of the window."""
    return lambda tokens: [token for token in tokens if token < end_of_text]
