"""How a transcribe call cuts its audio into windows and its windows' tokens into segments: Whisper's sequential
seeking (`sequential`), independent windows cut at quiet points (`chunked`, and transcribe_batch's plan), or the
speech Silero VAD finds (`speech_only`). Each works through the call it is given (whisper/call.py: its windows,
decoding, features and segments), so every path builds and decodes its windows the same way."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
import torch

from ..io import audio as audio_io
from ..io.formats import Segment
from ..recipe.fallback import WindowResult
from ..runtime.frames import Frames
from .sequential import (
    TimedTokens,
    WindowOutcome,
    batched_segments,
    seek_text_tokens,
    text_token_count,
    transcribe_sequential,
)
from .sequential import chunk_segments as timed_chunk_segments
from .vad import on_file_timeline, speech_regions, speech_windows

# transformers stops conditioning on previous text from this sampling temperature up (openai: above it)
CONDITIONING_TEMPERATURE_LIMIT = 0.5


@dataclass(frozen=True)
class Chunk:
    """A quiet-point window of one audio: where it starts and how long it is (s), its samples, its feature frames."""

    offset: float
    duration: float
    samples: np.ndarray
    frames: int


@dataclass(frozen=True)
class TextSegment:
    start: float
    end: float
    text: str
    tokens: tuple[int, ...] | None = None
    words: tuple = ()
    window: WindowResult | None = None
    all_tokens: tuple[int, ...] = ()  # its generated ids, with or without timestamps

    def output(self) -> Segment:
        window = self.window
        if window is None:
            return Segment(self.start, self.end, self.text, self.all_tokens)
        return Segment(self.start, self.end, self.text, self.all_tokens, words=self.words,
                       avg_logprob=_rounded(window.avg_logprob), compression_ratio=round(window.compression_ratio, 4),
                       no_speech_prob=_rounded(window.no_speech_prob), temperature=window.temperature)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


# how a window decoded once is split into segments, by TranscribeOptions.faster_whisper_windows
WINDOW_SPLITS = {False: timed_chunk_segments, True: batched_segments}


def independent_segments(tokens: list[int], window: int, offset: float, duration: float, timestamps: bool,
                         timestamp_begin: int, end_of_text: int, frames: Frames, words: list | None = None,
                         place_words: Callable | None = None, last_speech: float = 0.0,
                         faster_whisper: bool = False) -> tuple[list[TimedTokens], float]:
    """(segments of window number `window`, starting at `offset` s and `duration` s long, where speech last ended),
    split as ours or (`faster_whisper`) as faster-whisper's batched pipeline splits (WINDOW_SPLITS)."""
    if timestamps:
        segments = WINDOW_SPLITS[faster_whisper](tokens, timestamp_begin, end_of_text, offset, duration, frames)
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


def chunk_plan(call, samples: np.ndarray) -> list[tuple[int, Chunk]]:
    """(number, window) of the quiet-point windows of one audio (one window for audio up to a window)."""
    pipeline = call.pipeline
    windows = audio_io.split_long_audio(samples, max_seconds=pipeline.chunk_samples(call.options.chunk_length)
                                        / audio_io.SAMPLE_RATE)
    hop = pipeline.processor.feature_extractor.hop_length
    return [(number, Chunk(offset, audio_io.duration_seconds(window), window, len(window) // hop))
            for number, (offset, window) in enumerate(windows)]


def chunk_segments(call, number: int, window: Chunk, timestamps: bool, last_speech: float
                   ) -> tuple[list[TextSegment], float]:
    """The segments of decoded quiet-point window `number` (none when it was judged silent)."""
    result = call.results[number]
    if result.silent:
        return [], last_speech
    timed, last_speech = independent(call, result, number, window.offset, window.duration, timestamps, last_speech)
    return [call.segment(piece, timestamps) for piece in timed], last_speech


def independent(call, result: WindowResult, number: int, offset: float, duration: float, timestamps: bool,
                last_speech: float):
    """The timed pieces of a window decoded on its own (independent_segments)."""
    tokens = call.pipeline.tokens
    words = result.decoded.extras.words if result.decoded.extras else None
    return independent_segments(result.decoded.tokens, number, offset, duration, timestamps, tokens.timestamp_begin,
                                tokens.end_of_text, call.pipeline.chunk_frames(call.options.chunk_length), words,
                                call.place_words, last_speech, call.options.faster_whisper_windows)


def chunked(call, samples: np.ndarray, timestamps: bool) -> list[TextSegment]:
    """Windows cut at quiet points, each decoded on its own (one window for audio up to 30 s)."""
    plan = chunk_plan(call, samples)
    segments, last_speech = [], 0.0
    per_second = audio_io.SAMPLE_RATE // call.pipeline.processor.feature_extractor.hop_length
    for number, window in plan:
        call.report(number / len(plan), f"transcribing window {number + 1} of {len(plan)}")
        # faster-whisper's batched pipeline aligns words over the window's whole seconds
        frames = math.ceil(window.duration) * per_second if call.options.faster_whisper_windows else window.frames
        call.decode_windows([call.window(call.features(window.samples), timestamps,
                                         previous=(call.prompts.initial or None) if number == 0 else None,
                                         audio_frames=frames)])
        pieces, last_speech = chunk_segments(call, number, window, timestamps, last_speech)
        call.emit(pieces)
        segments += pieces
    return segments


def speech_only(call, samples: np.ndarray, timestamps: bool = True) -> list[TextSegment]:
    """The VAD path: speech windows (vad.py) decoded `vad_batch_size` at a time as rows of one batch, each on its
    own (with timestamps; without, a window is one segment spanning its speech); times mapped back to the file's
    timeline."""
    options, pipeline = call.options, call.pipeline
    vad = options.vad_options
    windows = speech_windows(samples, speech_regions(samples, vad), pipeline.chunk_samples(options.chunk_length),
                             vad.speech_pad_ms * audio_io.SAMPLE_RATE // 1000)
    segments, hop = [], pipeline.processor.feature_extractor.hop_length
    for begin in range(0, len(windows), options.vad_batch_size):
        last = min(begin + options.vad_batch_size, len(windows))
        call.report(begin / len(windows), f"transcribing speech windows {begin + 1}-{last} of {len(windows)}")
        group = windows[begin:last]
        # words always: they place segments on the file's timeline (kept in the output only when asked)
        rows = [replace(call.window(call.features(window.samples), timestamps, previous=call.prompts.initial or None,
                                    audio_frames=len(window.samples) // hop),
                        word_tokens=window_text_tokens(pipeline.tokens.end_of_text)) for window in group]
        rows = rows[:1] + [replace(row, prefix=None) for row in rows[1:]]  # the prefix starts the first only
        first = len(call.results)
        for number, (window, result) in enumerate(zip(group, call.decode_windows(rows)), start=first):
            if result.silent:
                continue
            timed, _ = independent(call, result, number, 0.0, audio_io.duration_seconds(window.samples), timestamps,
                                    0.0)
            pieces = [part for piece in timed for part in on_file_timeline(piece, window)]
            if not timestamps:  # one segment a window, spanning its speech (faster-whisper's batched output)
                pieces = [replace(timed[0], start=pieces[0].start, end=pieces[-1].end,
                                  words=tuple(word for piece in pieces for word in piece.words))]
            if not options.word_timestamps:
                pieces = [replace(piece, words=()) for piece in pieces]
            finished = [call.segment(piece, timestamps) for piece in pieces]
            call.emit(finished)
            segments += finished
    return segments


def sequential(call, samples: np.ndarray, is_long: bool, condition: bool, timestamps: bool = True
               ) -> list[TextSegment]:
    """Whisper's own long-form algorithm (sequential.py); audio up to a window keeps the usual 30-s features
    (their first window's worth with a shorter chunk_length)."""
    options, pipeline, tokens = call.options, call.pipeline, call.pipeline.tokens
    sampling = options.sampling
    if condition and sampling.do_sample and sampling.temperature >= CONDITIONING_TEMPERATURE_LIMIT:
        condition = False
    recipe = options.recipe
    audio_frames = len(samples) // pipeline.processor.feature_extractor.hop_length
    keep_words = options.word_timestamps
    # without word timestamps, long audio still aligns the words of a window the next one starts inside: the next
    # window starts at its last word's end (sequential.py)
    seek_words = (partial(seek_text_tokens, timestamp_begin=tokens.timestamp_begin, end_of_text=tokens.end_of_text)
                  if is_long and timestamps and options.seek_to_words and not keep_words else None)

    def decode(window: torch.Tensor, previous: list[int] | None, real: int) -> WindowOutcome:
        frames = real if is_long else min(real, audio_frames)
        row = call.window(window, timestamps, previous=previous, audio_frames=frames, complete_segments=True)
        row = row if seek_words is None else replace(row, word_tokens=seek_words)
        result = call.decode_windows([row])[0]
        extras = result.decoded.extras
        return WindowOutcome(result.decoded.tokens, skip=result.silent,
                             reset_prompt=result.temperature > recipe.prompt_reset_on_temperature,
                             words=extras.words if extras else None)

    def emit(pieces: list[TimedTokens]) -> None:
        call.emit([call.segment(piece, timestamps) for piece in pieces])

    frames = pipeline.chunk_frames(options.chunk_length)
    if options.whole_features:
        is_long = True
        features = call.whole_features(samples)
    else:
        features = pipeline.features(samples, whole=is_long)
    output = transcribe_sequential(features if is_long else features[..., :frames.window], decode,
                                   tokens.timestamp_begin, tokens.end_of_text, frames, condition, call.progress,
                                   initial_prompt=call.prompts.initial, place_words=call.place_words,
                                   with_frames=True, on_segments=emit if call.on_segment is not None else None,
                                   audio_seconds=audio_io.duration_seconds(samples),
                                   hallucination_silence_threshold=options.hallucination_silence_threshold,
                                   keep_words=keep_words)
    return [call.segment(piece, timestamps) for piece in output.segments]
