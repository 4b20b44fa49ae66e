"""One transcribe call: its options, prompt tokens and windows, and what it accumulates across its windows (their
results and tokens, the language, stats); what the long-form strategies (longform/strategies.py) ask of it.

`CallWindows` is the one place a call's options become what the pipeline decodes: `TranscribeOptions` (with the
call's prompt tokens) plus the facts of one window (its features, language, place in the file) make one `Window`.
Every path of a transcribe call (one window, sequential, chunked, VAD) and of transcribe_batch builds its windows
here, so an option honoured by one is honoured by all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import torch

from ..core.logits import Sampling
from ..core.stats import DecodeStats
from .io.formats import Segment
from .longform.sequential import TimedTokens, complete_text_tokens, window_features
from .longform.strategies import TextSegment, window_text_tokens
from .options import PromptTokens, TranscribeOptions, prompt_tokens, window_context
from .recipe.fallback import WindowResult, decode_with_fallback
from .recipe.words import place_words
from .runtime.pipeline import Speculation, Window, WindowDecoder, WindowPipeline

Progress = Callable[[float, str], None]  # (fraction done, what is happening)
SegmentListener = Callable[[Segment], None]  # gets each segment with text as soon as it is final
FASTER_WHISPER_PADDING = 160  # zero samples faster-whisper's feature extractor appends to the audio


@dataclass(frozen=True)
class CallWindows:
    """Builds the windows of one call: what is the same for each of them."""

    pipeline: WindowPipeline
    options: TranscribeOptions
    prompts: PromptTokens

    def window(self, features: torch.Tensor, language_id: int | None, timestamps: bool, *,
               previous: list[int] | None = None, audio_frames: int | None = None, first: bool = True,
               complete_segments: bool = False) -> Window:
        """A window: the options' prompt pieces (the prefix on the call's `first` window only; hotwords and
        `previous` text as its <|startofprev|> context), rules, limits and sampling, and word alignment of its text
        when word timestamps are asked (`complete_segments`: only the segments a sequential window keeps)."""
        options, tokens = self.options, self.pipeline.tokens
        word_tokens = None
        if options.word_timestamps:
            word_tokens = (partial(complete_text_tokens, timestamp_begin=tokens.timestamp_begin,
                                   end_of_text=tokens.end_of_text) if complete_segments and timestamps
                           else window_text_tokens(tokens.end_of_text))
        prefix = tuple(self.prompts.prefix) if self.prompts.prefix and first else None
        window_frames = (None if options.chunk_length is None
                         else self.pipeline.chunk_frames(options.chunk_length).window)
        return self._window(features, language_id, timestamps, previous, audio_frames, prefix, word_tokens,
                            window_frames)

    def live_window(self, features: torch.Tensor, language_id: int | None, *, previous: list[int] | None = None,
                    audio_frames: int | None = None) -> Window:
        """A live update's window (live/streaming.py): as a call's, with timestamps and `previous` (the committed
        text before the buffer), and what a live decode needs besides: its words always aligned (a cut follows the
        last word; speech the decode skipped is found between them), its scores and the silence rule wherever the
        recipe judges silence (an update is decoded once, without fallback retries), the whole 30-s window whatever
        the chunk length (the buffer grows to max_buffer_seconds), and never the prefix."""
        recipe, tokens = self.options.recipe, self.pipeline.tokens
        return self._window(features, language_id, True, previous, audio_frames, None,
                            window_text_tokens(tokens.end_of_text), None,
                            score=recipe.no_speech_threshold is not None, silence_threshold=recipe.skip_threshold)

    def _window(self, features, language_id, timestamps, previous, audio_frames, prefix, word_tokens, window_frames,
                score: bool = False, silence_threshold: float | None = None) -> Window:
        options = self.options
        return Window(features, language_id, timestamps,
                      window_context(self.prompts.hotwords, previous, self.pipeline.tokens.prompt_limit),
                      prefix=prefix, word_tokens=word_tokens, audio_frames=audio_frames, task=options.task,
                      suppression=options.suppression, max_new_tokens=options.max_new_tokens,
                      repetition_penalty=options.repetition_penalty,
                      no_repeat_ngram_size=options.no_repeat_ngram_size,
                      sampling=options.sampling, window_frames=window_frames, score=score,
                      silence_threshold=silence_threshold)


@dataclass
class Call:
    pipeline: WindowPipeline
    speculation: Speculation
    options: TranscribeOptions
    prompts: PromptTokens
    windows: CallWindows
    language_id: int | None
    generator: torch.Generator | None
    stats: DecodeStats = field(default_factory=DecodeStats)
    progress: Progress | None = None
    decode: WindowDecoder | None = None
    on_segment: SegmentListener | None = None
    language: str | None = None
    language_probability: float | None = None
    window_tokens: list[list[int]] = field(default_factory=list)
    results: list[WindowResult] = field(default_factory=list)  # per decoded window, in order

    @classmethod
    def start(cls, pipeline: WindowPipeline, speculation: Speculation, options: TranscribeOptions,
              generator: torch.Generator | None, progress: Progress | None = None,
              window_decoder: WindowDecoder | None = None, on_segment: SegmentListener | None = None) -> Call:
        """A call with these options (its windows built by CallWindows) on `pipeline`, drafted by `speculation`."""
        tokens = pipeline.tokens
        prompts = prompt_tokens(pipeline.processor.tokenizer, options, tokens.prompt_limit)
        language_id = tokens.language_token(options.language) if options.language and tokens.multilingual else None
        return cls(pipeline, speculation, options, prompts, CallWindows(pipeline, options, prompts), language_id,
                   generator,
                   progress=progress, decode=window_decoder or pipeline.decode, on_segment=on_segment)

    @staticmethod
    def generator(options: TranscribeOptions) -> torch.Generator | None:
        """A call's random source: for sampling, or for fallback retries (seeded by `seed`: reproducible)."""
        if options.sampling.do_sample or max(options.recipe.temperatures) == 0:
            return options.sampling.generator(options.seed)
        return Sampling(do_sample=True).generator(options.seed)

    def window(self, features: torch.Tensor, timestamps: bool, *, previous: list[int] | None = None,
               audio_frames: int | None = None, complete_segments: bool = False, first: bool | None = None) -> Window:
        """The next window of the call (the prefix on its first only): CallWindows."""
        return self.windows.window(features, self.language_id, timestamps, previous=previous,
                                   audio_frames=audio_frames, first=not self.window_tokens if first is None else first,
                                   complete_segments=complete_segments)

    def decode_windows(self, windows: list[Window]) -> list[WindowResult]:
        """Windows of the call as rows of one decode (with fallback retries)."""
        results = decode_with_fallback(self.pipeline, windows, self.options.recipe, self.stats, self.decode_rows)
        for result in results:
            self.record(result, len(self.results))
        return results

    def decode_rows(self, windows: list[Window]):
        """Windows of the call as rows of one decode, once (no retries): the call's decoder, drafter and generator."""
        return self.decode(windows, self.speculation, self.generator)

    def record(self, result: WindowResult, number: int) -> None:
        """Window `number` decoded: its tokens kept, and the first window's detected language kept for the rest
        (unless multilingual: every window detects its own)."""
        decoded = result.decoded
        if not self.options.multilingual:
            self.language_id = self.language_id if self.language_id is not None else decoded.language_id
        if self.language is None and decoded.detected_language is not None:
            self.language, self.language_probability = decoded.detected_language, decoded.language_probability
        while len(self.results) <= number:
            self.results.append(None)
            self.window_tokens.append([])
        self.results[number], self.window_tokens[number] = result, decoded.tokens

    def features(self, samples: np.ndarray) -> torch.Tensor:
        """One window's features: openai's (the audio padded to 30 s), or faster-whisper's (whole_features)."""
        if not self.options.whole_features:
            return self.pipeline.features(samples)
        frames = self.pipeline.chunk_frames(self.options.chunk_length)
        return window_features(self.whole_features(samples), 0, frames)[0]

    def whole_features(self, samples: np.ndarray) -> torch.Tensor:
        return faster_whisper_features(self.pipeline, samples)

    @property
    def place_words(self):
        return partial(place_words, prepend=self.options.prepend_punctuations, append=self.options.append_punctuations)

    def segment(self, piece: TimedTokens, timestamps: bool) -> TextSegment:
        return TextSegment(round(piece.start, 3), round(piece.end, 3), self.pipeline.segment_text(list(piece.tokens)),
                           piece.tokens if timestamps else None, piece.words, self.results[piece.window], piece.tokens)

    def emit(self, segments: list[TextSegment]) -> None:
        if self.on_segment is not None:
            for segment in segments:
                if segment.text.strip():
                    self.on_segment(segment.output())

    def report(self, fraction: float, description: str) -> None:
        if self.progress is not None:
            self.progress(fraction, description)


def faster_whisper_features(pipeline: WindowPipeline, samples: np.ndarray) -> torch.Tensor:
    """faster-whisper's log-mel of all of `samples`: its frames of the audio, without the padding's own."""
    features = pipeline.features(np.pad(samples, (0, FASTER_WHISPER_PADDING)), whole=True)
    return features[..., : len(samples) // pipeline.processor.feature_extractor.hop_length]
