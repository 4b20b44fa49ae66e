"""Speculative Whisper: audio in, text + segments + telemetry out, through the one engine loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.draft_length import DEFAULT_DRAFT_TOKENS, DraftLength
from ..core.drafter import Drafter
from ..core.logits import Sampling
from ..core.modes import MODES
from ..core.prompt_lookup import PromptLookupDrafter
from ..core.stats import DecodeStats
from ..errors import ModelError, SpecdecError
from . import audio as audio_io
from .drafters import AssistantDrafter, EarlyExitDrafter, QuantizedSelfDrafter, UniversalDrafter
from .drafters.assistant import check_same_device
from .formats import Segment
from .longform import TimedTokens, chunk_segments, transcribe_sequential
from .pipeline import Window, WindowPipeline
from .result import TranscriptionResult

Progress = Callable[[float, str], None]  # (fraction done, what is happening)
LONG_FORM_MODES = ("sequential", "chunked")
# transformers stops conditioning on previous text from this sampling temperature up (openai: above it)
CONDITIONING_TEMPERATURE_LIMIT = 0.5


def _load(spec, device, dtype):
    """(model, processor, name) from a spec string, a LoadedWhisper, or a (model, processor) pair."""
    if isinstance(spec, str):
        from ..weights.whisper_models import load_whisper

        loaded = load_whisper(spec, device=device, dtype=dtype)
        return loaded.model, loaded.processor, loaded.name
    if hasattr(spec, "model") and hasattr(spec, "processor"):
        return spec.model, spec.processor, getattr(spec, "name", type(spec.model).__name__)
    if isinstance(spec, tuple):
        model, processor = spec
        return model, processor, getattr(model.config, "_name_or_path", "") or type(model).__name__
    return spec, None, getattr(spec.config, "_name_or_path", "") or type(spec).__name__


def resolve_mode(mode, assistant_model, assistant_tokenizer, prompt_lookup_num_tokens, assistant_early_exit):
    """The drafting mode from an explicit `mode` or from the transformers-style arguments given."""
    if mode is not None:
        if mode not in MODES:
            raise SpecdecError(f"unknown mode '{mode}': choose one of {', '.join(MODES)}")
        return mode
    if assistant_model is not None:
        return "universal" if assistant_tokenizer is not None else "assistant"
    if prompt_lookup_num_tokens:
        return "prompt-lookup"
    if assistant_early_exit:
        return "early-exit"
    return "off"


def _first_given(*values):
    return next((value for value in values if value is not None), None)


class SpeculativeWhisper:
    """Transcribe with a main Whisper model, optionally verified against a drafter.

    Greedy output is exactly the main model's greedy output whatever the drafter; sampling output has
    exactly the main model's distribution. Accepts transformers' argument names (`assistant_model`,
    `num_assistant_tokens`, `prompt_lookup_num_tokens`, `assistant_early_exit`, `assistant_tokenizer`,
    `return_timestamps`, `condition_on_prev_tokens`) and the aliases `draft_model` / `num_draft_tokens`.

    Audio longer than 30 s is decoded with timestamps, window after window, each window starting where the
    last complete segment ended (`long_form="sequential"`, Whisper's own algorithm), or cut at quiet points
    into independent windows (`long_form="chunked"`). `timestamps=True` decodes short audio with timestamps
    too; `condition_on_previous_text=True` prompts each window with the text before it.
    """

    def __init__(self, main="base", drafter: str | Drafter | None = None, *, mode: str | None = None,
                 assistant_model=None, draft_model=None, assistant_tokenizer=None, processor=None,
                 num_assistant_tokens: int | None = None, num_draft_tokens: int | None = None,
                 dynamic: bool = False, assistant_confidence_threshold: float = 0.0,
                 prompt_lookup_num_tokens: int | None = None, assistant_early_exit: int | None = None,
                 do_sample: bool = False, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                 seed: int | None = None, language: str | None = None, task: str = "transcribe",
                 device: str = "cpu", dtype: torch.dtype | None = None, max_new_tokens: int | None = None,
                 timestamps: bool | None = None, return_timestamps: bool | None = None,
                 long_form: str = "sequential", condition_on_previous_text: bool | None = None,
                 condition_on_prev_tokens: bool | None = None):
        dtype = dtype or torch.float32
        self.timestamps = _first_given(timestamps, return_timestamps)
        self.long_form = _check_long_form(long_form)
        self.condition_on_previous_text = bool(_first_given(condition_on_previous_text, condition_on_prev_tokens))
        model, loaded_processor, self.main_name = _load(main, device, dtype)
        processor = processor or loaded_processor
        if processor is None:
            raise ModelError("a Whisper model given as an object needs its processor: pass processor=...")
        self.language, self.seed = language, seed
        draft_length = DraftLength(num_draft_tokens or num_assistant_tokens or DEFAULT_DRAFT_TOKENS, dynamic=dynamic)
        self.pipeline = WindowPipeline(model.eval(), processor, None, task=task,
                                       sampling=Sampling(do_sample, temperature, top_k, top_p),
                                       draft_length=draft_length, max_new_tokens=max_new_tokens)

        assistant_model = assistant_model if assistant_model is not None else draft_model
        self.assistant_name = None
        if isinstance(drafter, Drafter):
            self.mode, self.pipeline.drafter = drafter.name, drafter
            return
        self.mode = resolve_mode(drafter or mode, assistant_model, assistant_tokenizer,
                                 prompt_lookup_num_tokens, assistant_early_exit)
        if self.mode == "prompt-lookup" and prompt_lookup_num_tokens:
            self.pipeline.draft_length = DraftLength(prompt_lookup_num_tokens, dynamic=dynamic)
        self.pipeline.drafter = self._make_drafter(assistant_model, assistant_tokenizer,
                                                   assistant_confidence_threshold, assistant_early_exit, device, dtype)

    # the parts callers read: the main model, its processor and tokens, the lean decoder, the drafter
    model = property(lambda self: self.pipeline.model)
    processor = property(lambda self: self.pipeline.processor)
    tokens = property(lambda self: self.pipeline.tokens)
    runner = property(lambda self: self.pipeline.runner)
    drafter = property(lambda self: self.pipeline.drafter)
    task = property(lambda self: self.pipeline.task)
    sampling = property(lambda self: self.pipeline.sampling)
    draft_length = property(lambda self: self.pipeline.draft_length)
    max_new_tokens = property(lambda self: self.pipeline.max_new_tokens)

    def _make_drafter(self, assistant_model, assistant_tokenizer, threshold, early_exit, device, dtype):
        if self.mode == "off":
            return None
        if self.mode == "quantized-self":
            return QuantizedSelfDrafter(self.model, threshold)
        if self.mode == "early-exit":
            layers = len(self.runner.layers)
            return EarlyExitDrafter(self.model, early_exit or max(1, layers // 2), threshold)
        if self.mode == "prompt-lookup":
            return PromptLookupDrafter()
        if assistant_model is None:
            raise SpecdecError(f"mode '{self.mode}' needs an assistant model (--assistant / assistant_model=)")
        model, processor, self.assistant_name = _load(assistant_model, device, dtype)
        check_same_device(self.model, model)
        if self.mode == "assistant":
            return AssistantDrafter(model, self.model, threshold)
        tokenizer = assistant_tokenizer or (processor.tokenizer if processor is not None else None)
        if tokenizer is None:
            raise ModelError("universal mode needs the assistant's tokenizer: pass assistant_tokenizer=...")
        return UniversalDrafter(model, tokenizer, self.processor.tokenizer, language=self.language or "en",
                                task=self.task, confidence_threshold=threshold)

    def _labels(self) -> dict:
        return {"mode": self.mode, "main_model": self.main_name, "assistant_model": self.assistant_name}

    def transcribe(self, audio, sample_rate: int | None = None, language: str | None = None,
                   task: str | None = None, progress: Progress | None = None, *, timestamps: bool | None = None,
                   return_timestamps: bool | None = None, long_form: str | None = None,
                   condition_on_previous_text: bool | None = None) -> TranscriptionResult:
        """Transcribe a path, encoded bytes or a sample array (give `sample_rate` unless it is 16 kHz).

        `progress(fraction_done, description)` is called before each 30-second window and at the end. The
        keyword options override the constructor's for this call.
        """
        started = time.perf_counter()
        samples = audio_io.load_audio(audio, sample_rate=sample_rate)
        if task is not None:
            self.pipeline.task = task
        language = language or self.language
        language_id = self.tokens.language_token(language) if (language and self.tokens.multilingual) else None
        timestamps = _first_given(timestamps, return_timestamps, self.timestamps)
        long_form = _check_long_form(long_form or self.long_form)
        condition = _first_given(condition_on_previous_text, self.condition_on_previous_text)
        is_long = len(samples) > self.pipeline.window_samples
        if is_long and long_form == "sequential" and timestamps is False:
            raise SpecdecError("sequential long-form decoding needs timestamps: use long_form='chunked' for audio "
                               "over 30 s without timestamps")
        run = _Run(language_id, self.sampling.generator(self.seed), DecodeStats(), progress)
        if is_long and long_form == "chunked":
            segments = self._transcribe_chunked(samples, run, bool(timestamps))
        elif is_long or timestamps:
            segments = self._transcribe_sequential(samples, run, is_long, condition)
        else:
            segments = self._transcribe_chunked(samples, run, False)
        run.stats.total_seconds = time.perf_counter() - started
        if progress is not None:
            progress(1.0, "done")
        detected = language if language else ("en" if not self.tokens.multilingual else run.language)
        spoken = [segment for segment in segments if segment.text]
        return TranscriptionResult(
            text=self._text(spoken), segments=[Segment(s.start, s.end, s.text) for s in spoken],
            window_tokens=run.window_tokens, stats=run.stats, language=detected,
            duration=audio_io.duration_seconds(samples), **self._labels())

    def transcribe_batch(self, audios: list, sample_rate: int | None = None, language: str | None = None,
                         batch_size: int = 8) -> list[TranscriptionResult]:
        """Transcribe several audios (paths, bytes or arrays) together, `batch_size` rows at a time: each row
        drafts and accepts at its own pace (see batch.py). Decodes without timestamps; audio over 30 s is cut
        at quiet points into windows that join the batch as rows, so each result has the tokens of
        transcribe(audio, long_form="chunked", timestamps=False)."""
        from .batch import transcribe_batch

        return transcribe_batch(self.pipeline, audios, sample_rate, language or self.language, batch_size,
                                self.sampling.generator(self.seed), self._labels())

    def stream(self, **options):
        """A live transcription stream on these models, drafting each update from the last hypothesis (see
        streaming.py): `feed(samples)` audio as it arrives, get updates with committed and tentative text."""
        from .streaming import StreamingTranscriber

        return StreamingTranscriber(self, **options)

    def _decode_run(self, features: torch.Tensor, run: _Run, timestamps: bool, previous: list[int] | None = None):
        """One window of a transcribe call; the first window's detected language is kept for the rest."""
        decoded = self.pipeline.decode([Window(features, run.language_id, timestamps, previous)], run.generator)[0]
        run.language_id = decoded.language_id
        run.language = run.language or decoded.detected_language
        run.stats.add(decoded.stats)
        run.window_tokens.append(decoded.tokens)
        return decoded.tokens

    def _transcribe_chunked(self, samples: np.ndarray, run: _Run, timestamps: bool) -> list[_TextSegment]:
        """Windows cut at quiet points, each decoded on its own (one window for audio up to 30 s)."""
        windows = audio_io.split_long_audio(samples)
        segments = []
        for index, (offset, window) in enumerate(windows):
            if run.progress is not None:
                run.progress(index / len(windows), f"transcribing window {index + 1} of {len(windows)}")
            tokens = self._decode_run(self.pipeline.features(window), run, timestamps)
            duration = audio_io.duration_seconds(window)
            if timestamps:
                timed = chunk_segments(tokens, self.tokens.timestamp_begin, self.tokens.end_of_text, offset,
                                       duration, self.pipeline.frames)
                segments += [self._segment(piece) for piece in timed]
            else:
                segments.append(_TextSegment(round(offset, 3), round(offset + duration, 3), self.pipeline.text(tokens)))
        return segments

    def _transcribe_sequential(self, samples: np.ndarray, run: _Run, is_long: bool,
                               condition: bool) -> list[_TextSegment]:
        """Whisper's own long-form algorithm (see longform.py); audio up to 30 s keeps the usual 30-s features."""
        if condition and self.sampling.do_sample and self.sampling.temperature >= CONDITIONING_TEMPERATURE_LIMIT:
            condition = False

        def decode(window: torch.Tensor, previous: list[int] | None) -> list[int]:
            return self._decode_run(window, run, True, previous)

        output = transcribe_sequential(self.pipeline.features(samples, whole=is_long), decode,
                                       self.tokens.timestamp_begin, self.tokens.end_of_text, self.pipeline.frames,
                                       condition, run.progress)
        return [self._segment(piece) for piece in output.segments]

    def _segment(self, piece: TimedTokens) -> _TextSegment:
        return _TextSegment(round(piece.start, 3), round(piece.end, 3), self.pipeline.text(list(piece.tokens)),
                            piece.tokens)

    def _text(self, segments: list[_TextSegment]) -> str:
        if all(segment.tokens is None for segment in segments):
            return " ".join(segment.text for segment in segments)
        return self.pipeline.text([token for segment in segments for token in segment.tokens or ()])


@dataclass
class _Run:
    """What one transcribe call accumulates across its windows."""

    language_id: int | None
    generator: torch.Generator | None
    stats: DecodeStats
    progress: Progress | None
    language: str | None = None
    window_tokens: list[list[int]] = field(default_factory=list)


@dataclass(frozen=True)
class _TextSegment:
    start: float
    end: float
    text: str
    tokens: tuple[int, ...] | None = None


def _check_long_form(long_form: str) -> str:
    if long_form not in LONG_FORM_MODES:
        raise SpecdecError(f"unknown long-form mode '{long_form}': choose one of {', '.join(LONG_FORM_MODES)}")
    return long_form
