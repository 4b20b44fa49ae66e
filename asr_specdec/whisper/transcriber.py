"""Speculative Whisper: audio in, text + segments + telemetry out, through the one engine loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import torch

from ..core.drafter import Drafter
from ..core.logits import Sampling
from ..core.stats import DecodeStats
from ..errors import ModelError, SpecdecError
from .arguments import call_options, constructor_options
from .drafters import DrafterContext, build_drafter
from .io import audio as audio_io
from .io.formats import Segment
from .loading import LoadedMain, load_model, resolve_device
from .longform.chunks import independent_segments, window_text_tokens
from .longform.hallucination import check_applies
from .longform.sequential import (
    TimedTokens,
    WindowOutcome,
    seek_text_tokens,
    transcribe_sequential,
    window_features,
)
from .longform.vad import on_file_timeline, speech_regions, speech_windows
from .model_options import ModelOptions
from .options import PromptTokens, TranscribeOptions, prompt_tokens
from .recipe.fallback import WindowResult, decode_with_fallback
from .recipe.window_extras import recipe_analysis
from .recipe.words import place_words
from .result import TranscriptionResult
from .runtime.compute import model_dtype, parse_compute_type
from .runtime.pipeline import Window, WindowDecoder, WindowPipeline
from .windows import CallWindows

Progress = Callable[[float, str], None]  # (fraction done, what is happening)
SegmentListener = Callable[[Segment], None]  # gets each segment with text as soon as it is final
# transformers stops conditioning on previous text from this sampling temperature up (openai: above it)
CONDITIONING_TEMPERATURE_LIMIT = 0.5
FASTER_WHISPER_PADDING = 160  # zero samples faster-whisper's feature extractor appends to the audio


class SpeculativeWhisper:
    """Transcribe with a main Whisper model, optionally verified against a drafter (by default the project's:
    the main model's int8 self on a CPU, none elsewhere; `mode="off"` decodes plainly).

    Greedy output is exactly the main model's greedy output whatever the drafter; sampling output has
    exactly the main model's distribution. Accepts transformers' argument names (`assistant_model`,
    `num_assistant_tokens`, `prompt_lookup_num_tokens`, `assistant_early_exit`, `assistant_tokenizer`,
    `return_timestamps`, `condition_on_prev_tokens`) and the aliases `draft_model` / `num_draft_tokens`.

    Audio longer than 30 s is decoded with timestamps, window after window, each window starting where the
    last complete segment ended (`long_form="sequential"`, Whisper's own algorithm), or cut at quiet points
    into independent windows (`long_form="chunked"`). `timestamps=True` decodes short audio with timestamps
    too; `condition_on_previous_text=True` prompts each window with the text before it.

    `compute_type` sets the precision of the main model's encoder and decoder (compute.py): "float32",
    "bfloat16", "float16" (CUDA), "int8", "ENCODER:DECODER" (e.g. "int8:float32"), or "auto" (the
    default). `dtype` is its older spelling (a torch dtype for both halves).

    `draft_schedule` ("adaptive", the default; "fixed"; "heuristic", transformers' +2/-1; or transformers'
    `num_assistant_tokens_schedule` names) decides each round's draft length, starting from `num_draft_tokens`.

    The rest of openai's and faster-whisper's recipe (see options.py; every option may also be given per call):
    `temperature` means one thing in the constructor and in a call (openai's): 0 decodes greedily, above 0 samples
    at it, a list is the fallback ladder; beside `do_sample=True` (transformers' sampling: every window sampled,
    with `top_k`/`top_p`) it is that sampling's temperature.

    `word_timestamps=True` (words with times, segments refined by them), `temperature=(0.0, 0.2, ...)` or
    `temperature_fallback=True` (retries up the temperature ladder when a window's text is too repetitive or
    unlikely; `compression_ratio_threshold`, `logprob_threshold`), `no_speech_threshold` (windows judged
    silent give no text; on by default, None turns it off), `hallucination_silence_threshold` (with words:
    a hallucinated segment in silence is dropped and skipped, hallucination.py), `initial_prompt`, `prefix`,
    `hotwords`, `vad_filter=True` (Silero VAD; speech windows decoded as rows of one batch, `vad_options`), and
    `chunk_length` (faster-whisper's: windows of 1 to 30 s of audio, each zero-padded to 30 s; docs/longform.md).

    Inside, these keyword arguments become two frozen values, once (arguments.py): what the model is
    (`model_options`, model_options.ModelOptions) and how to transcribe (`options`, options.TranscribeOptions, which
    each call's keyword arguments override). `SpeculativeWhisper.from_options(model, options)` builds from them
    directly; a variant is a `dataclasses.replace` of either, with `main=whisper.loaded()` to share the weights.
    """

    def __init__(self, main="base", drafter: str | Drafter | None = None, **arguments):
        self._build(*constructor_options(main, drafter, **arguments))  # the arguments' names: arguments.py

    @classmethod
    def from_options(cls, model: ModelOptions | None = None, options: TranscribeOptions | None = None
                     ) -> SpeculativeWhisper:
        """A transcriber from what the model is and how to transcribe (each call may override the latter)."""
        whisper = cls.__new__(cls)
        whisper._build(model or ModelOptions(), options or TranscribeOptions())
        return whisper

    def _build(self, model_options: ModelOptions, options: TranscribeOptions) -> None:
        self.device = resolve_device(model_options.main, model_options.device)
        device = str(self.device)
        self.compute_type = parse_compute_type(model_options.compute_type, device)
        dtype = model_dtype(self.compute_type, device)
        self.options = options  # this transcriber's defaults; a call's overrides are a copy
        model, loaded_processor, self.main_name = load_model(model_options.main, device, dtype)
        processor = model_options.processor or loaded_processor
        if processor is None:
            raise ModelError("a Whisper model given as an object needs its processor: pass processor=...")
        self.pipeline = WindowPipeline(model.eval(), processor, None, task=options.task, sampling=options.sampling,
                                       draft_length=model_options.draft_length(),
                                       max_new_tokens=options.max_new_tokens, compute=self.compute_type,
                                       analysis=recipe_analysis)
        self.mode = model_options.resolved_mode(device)
        self.assistant_name = None
        self.pipeline.drafter = model_options.drafter or self._make_drafter(model_options, device, dtype)
        # what this transcriber is, as resolved: a variant is a `replace` of it (with `main` the loaded weights)
        self.model_options = replace(model_options, mode=self.mode, device=device, compute_type=self.compute_type)

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
    # this transcriber's transcription defaults (self.options)
    language = property(lambda self: self.options.language)
    seed = property(lambda self: self.options.seed)
    timestamps = property(lambda self: self.options.timestamps)
    long_form = property(lambda self: self.options.long_form)
    condition_on_previous_text = property(lambda self: self.options.condition_on_previous_text)

    def loaded(self) -> LoadedMain:
        """The main model as loaded, for ModelOptions.main: a variant built on it reuses these weights."""
        return LoadedMain(self.model, self.processor, self.main_name)

    def _make_drafter(self, options: ModelOptions, device: str, dtype):
        context = DrafterContext(self.model, self.processor.tokenizer, self.runner.weights, len(self.runner.layers),
                                 replace(options, mode=self.mode), self.language, self.task,
                                 partial(load_model, device=device, dtype=dtype))
        drafter = build_drafter(self.mode, context)
        self.assistant_name = context.assistant_name
        return drafter

    def _labels(self) -> dict:
        return {"mode": self.mode, "main_model": self.main_name, "assistant_model": self.assistant_name,
                "compute_type": self.compute_type.name, "backend": self.backend}

    @property
    def backend(self) -> str:
        """Which kernels run the main decoder: "native avx2" (the build), or "pytorch (cpu)" and why not."""
        if self.runner.native is not None:
            from ..native import capabilities

            return capabilities().description
        return f"pytorch ({self.runner.device.type})"

    def transcribe(self, audio, sample_rate: int | None = None, language: str | None = None,
                   task: str | None = None, progress: Progress | None = None, *, timestamps: bool | None = None,
                   return_timestamps: bool | None = None, long_form: str | None = None,
                   condition_on_previous_text: bool | None = None, window_decoder: WindowDecoder | None = None,
                   on_segment: SegmentListener | None = None, options: TranscribeOptions | None = None,
                   **recipe_options) -> TranscriptionResult:
        """Transcribe a path, encoded bytes or a sample array (give `sample_rate` unless it is 16 kHz).

        `progress(fraction_done, description)` is called before each 30-second window and at the end. The
        keyword options (the recipe's too: word_timestamps, vad_filter, initial_prompt, ...) override the
        constructor's for this call; a single `temperature` here is OpenAI's: 0 decodes greedily (with the
        configured fallback ladder), above 0 samples at it. `window_decoder` decodes this call's windows instead
        of the pipeline (the server routes them into shared batches); `on_segment` gets each segment as soon as
        it is final. `options` replaces this transcriber's TranscribeOptions for the call (a front end's own
        mapping, e.g. `dataclasses.replace(whisper.options, ...)`); the keyword options then override it.
        """
        started = time.perf_counter()
        options = call_options(options or self.options, language=language, task=task, timestamps=timestamps,
                               return_timestamps=return_timestamps, long_form=long_form,
                               condition_on_previous_text=condition_on_previous_text, **recipe_options)
        if options.diarize is not None:
            return self._diarized(audio, sample_rate, options, progress, window_decoder, on_segment)
        samples = audio_io.load_audio(audio, sample_rate=sample_rate)
        timestamps = options.timestamps
        if timestamps is None and options.word_timestamps:
            timestamps = True
        long_form, condition = options.long_form, options.condition_on_previous_text
        is_long = len(samples) > self.pipeline.chunk_samples(options.chunk_length)
        run = self._run(options, self._generator(options), progress, window_decoder, on_segment)
        if options.hallucination_silence_threshold is not None:
            check_applies(options.word_timestamps, not options.vad_filter and (
                long_form == "sequential" if is_long else timestamps is not False))
        if options.vad_filter:
            segments = self._transcribe_speech(samples, run, timestamps is not False)
        elif is_long and long_form == "chunked":
            segments = self._transcribe_chunked(samples, run, bool(timestamps))
        elif is_long or timestamps:
            # without timestamps, each 30-s window is one segment and the next one starts where it ends (openai's)
            segments = self._transcribe_sequential(samples, run, is_long, condition, timestamps is not False)
        else:
            segments = self._transcribe_chunked(samples, run, False)
        run.stats.total_seconds = time.perf_counter() - started
        if progress is not None:
            progress(1.0, "done")
        return self._result(run, segments, samples)

    def _run(self, options: TranscribeOptions, generator: torch.Generator | None, progress: Progress | None = None,
             window_decoder: WindowDecoder | None = None, on_segment: SegmentListener | None = None) -> _Run:
        """What one audio's transcription accumulates, its windows built by the call's options."""
        prompts = prompt_tokens(self.processor.tokenizer, options, self.tokens.prompt_limit)
        language_id = (self.tokens.language_token(options.language) if options.language and self.tokens.multilingual
                       else None)
        return _Run(language_id, generator, DecodeStats(), progress, options, prompts,
                    CallWindows(self.pipeline, options, prompts), task=options.task,
                    decode=window_decoder or self.pipeline.decode, on_segment=on_segment)

    def _result(self, run: _Run, segments: list[_TextSegment], samples: np.ndarray) -> TranscriptionResult:
        """One audio's result from its segments (the spoken ones kept) and what its run accumulated."""
        language = run.options.language
        detected = language if language else ("en" if not self.tokens.multilingual else run.language)
        spoken = [segment for segment in segments if segment.text.strip()]
        return TranscriptionResult(
            text=self._text(spoken), segments=[segment.output(self.tokens.timestamp_begin) for segment in spoken],
            window_tokens=run.window_tokens, stats=run.stats, language=detected,
            language_probability=run.language_probability if detected == run.language else 1.0,
            duration=audio_io.duration_seconds(samples), **self._labels())

    def _diarized(self, audio, sample_rate, options: TranscribeOptions, progress: Progress | None,
                  window_decoder: WindowDecoder | None, on_segment: SegmentListener | None) -> TranscriptionResult:
        """Transcribed with words, then each word and segment given its speaker (speakers/transcript.py);
        `on_segment` gets the segments once they have their speakers."""
        from .speakers.transcript import diarized

        worded = replace(options, diarize=None, word_timestamps=True)
        result = diarized(partial(self.transcribe, progress=progress, window_decoder=window_decoder, options=worded),
                          audio, sample_rate, options.diarize, keep_words=options.word_timestamps)
        for segment in result.segments if on_segment is not None else ():
            on_segment(segment)
        return result

    @staticmethod
    def _generator(options: TranscribeOptions) -> torch.Generator | None:
        """The run's random source: for sampling, or for fallback retries (seeded by `seed`: reproducible)."""
        if options.sampling.do_sample or max(options.recipe.temperatures) == 0:
            return options.sampling.generator(options.seed)
        return Sampling(do_sample=True).generator(options.seed)

    def transcribe_batch(self, audios: list, sample_rate: int | None = None, language: str | None = None,
                         batch_size: int = 8, *, options: TranscribeOptions | None = None,
                         **overrides) -> list[TranscriptionResult]:
        """Transcribe several audios (paths, bytes or arrays) together, their windows decoded as the rows of one
        batch `batch_size` at a time: each row drafts and accepts at its own pace (docs/longform.md). Each audio is
        transcribed as `transcribe(audio, long_form="chunked", ...)` transcribes it (audio over a window cut at
        quiet points into independent windows; every option, the call's keyword overrides as in transcribe, is
        honoured the same way: prompts, hotwords, suppression, timestamps and word timestamps, the recipe). Without
        a language, each audio's first window decodes first and its language is kept for the rest (unless
        `multilingual`). Options that need an audio's windows decoded one after another, or the whole audio at
        once, are refused by name: vad_filter, condition_on_previous_text, hallucination_silence_threshold,
        diarize."""
        if batch_size < 1:
            raise SpecdecError(f"batch_size must be at least 1, not {batch_size}")
        options = call_options(options or self.options, language=language, **overrides)
        for name in ("vad_filter", "condition_on_previous_text", "diarize"):
            if getattr(options, name) not in (None, False):
                raise SpecdecError(f"transcribe_batch cannot apply {name} (it decodes an audio's windows together); "
                                   f"use transcribe() for it")
        if options.hallucination_silence_threshold is not None:
            check_applies(options.word_timestamps, False)
        samples = [audio_io.load_audio(audio, sample_rate=sample_rate) for audio in audios]
        generator = self._generator(options)
        runs = [self._run(options, generator) for _ in samples]
        timestamps = bool(options.timestamps if options.timestamps is not None else options.word_timestamps)
        plans = [self._chunk_plan(audio, run, timestamps) for audio, run in zip(samples, runs)]
        # the first windows first where the rest keep their language (as a transcribe call's windows do)
        first_alone = self.tokens.multilingual and not options.language and not options.multilingual
        rounds = ([[(run, plan[:1]) for run, plan in zip(runs, plans)],
                   [(run, plan[1:]) for run, plan in zip(runs, plans)]] if first_alone else [list(zip(runs, plans))])
        for windows in rounds:
            rows = [(run, number, window) for run, plan in windows for number, window in plan]
            for begin in range(0, len(rows), batch_size):
                group = rows[begin:begin + batch_size]
                built = [run.windows.window(self._window_features(window.samples, run), run.language_id, timestamps,
                                            audio_frames=window.frames, first=number == 0,
                                            previous=(run.prompts.initial or None) if number == 0 else None)
                         for run, number, window in group]
                results = decode_with_fallback(self.pipeline, built, options.recipe, generator, DecodeStats())
                for (run, number, _), result in zip(group, results):
                    run.stats.add(result.decoded.stats)
                    self._record(run, result, number)
        results = []
        for audio, run, plan in zip(samples, runs, plans):
            segments, last_speech = [], 0.0
            for number, window in plan:
                pieces, last_speech = self._chunk_segments(run, number, window, timestamps, last_speech)
                segments += pieces
            results.append(self._result(run, segments, audio))
        return results

    def stream(self, **options):
        """A live transcription stream on these models, drafting each update from the last hypothesis (see
        streaming.py): `feed(samples)` audio as it arrives, get updates with committed and tentative text."""
        from .live.streaming import StreamingTranscriber

        return StreamingTranscriber(self, **options)

    def _window(self, features: torch.Tensor, run: _Run, timestamps: bool, previous: list[int] | None = None,
                audio_frames: int | None = None, complete_segments: bool = False) -> Window:
        """The next window of a transcribe call (the prefix on its first only): windows.py."""
        return run.windows.window(features, run.language_id, timestamps, previous=previous, audio_frames=audio_frames,
                                  first=not run.window_tokens, complete_segments=complete_segments)

    def _decode_windows(self, windows: list[Window], run: _Run) -> list[WindowResult]:
        """Windows of a transcribe call as rows of one decode (with fallback retries)."""
        results = decode_with_fallback(self.pipeline, windows, run.options.recipe, run.generator, run.stats,
                                       run.decode)
        for result in results:
            self._record(run, result, len(run.results))
        return results

    @staticmethod
    def _record(run: _Run, result: WindowResult, number: int) -> None:
        """Window `number` of a run decoded: its tokens kept, and the first window's detected language kept for the
        rest (unless multilingual: every window detects its own)."""
        decoded = result.decoded
        if not run.options.multilingual:
            run.language_id = run.language_id if run.language_id is not None else decoded.language_id
        if run.language is None and decoded.detected_language is not None:
            run.language, run.language_probability = decoded.detected_language, decoded.language_probability
        while len(run.results) <= number:
            run.results.append(None)
            run.window_tokens.append([])
        run.results[number], run.window_tokens[number] = result, decoded.tokens

    def _transcribe_chunked(self, samples: np.ndarray, run: _Run, timestamps: bool) -> list[_TextSegment]:
        """Windows cut at quiet points, each decoded on its own (one window for audio up to 30 s)."""
        plan = self._chunk_plan(samples, run, timestamps)
        segments, last_speech = [], 0.0
        for number, window in plan:
            if run.progress is not None:
                run.progress(number / len(plan), f"transcribing window {number + 1} of {len(plan)}")
            self._decode_windows([self._window(self._window_features(window.samples, run), run, timestamps,
                                               (run.prompts.initial or None) if number == 0 else None, window.frames)],
                                 run)
            pieces, last_speech = self._chunk_segments(run, number, window, timestamps, last_speech)
            run.emit(pieces, self.tokens.timestamp_begin)
            segments += pieces
        return segments

    def _chunk_plan(self, samples: np.ndarray, run: _Run, timestamps: bool) -> list[tuple[int, _Chunk]]:
        """(number, window) of the quiet-point windows of one audio (one window for audio up to a window)."""
        windows = audio_io.split_long_audio(samples, max_seconds=self.pipeline.chunk_samples(run.options.chunk_length)
                                            / audio_io.SAMPLE_RATE)
        hop = self.processor.feature_extractor.hop_length
        return [(number, _Chunk(offset, audio_io.duration_seconds(window), window, len(window) // hop))
                for number, (offset, window) in enumerate(windows)]

    def _chunk_segments(self, run: _Run, number: int, window: _Chunk, timestamps: bool, last_speech: float
                        ) -> tuple[list[_TextSegment], float]:
        """The segments of decoded quiet-point window `number` (none when it was judged silent)."""
        result = run.results[number]
        if result.silent:
            return [], last_speech
        timed, last_speech = self._independent(result, number, window.offset, window.duration, timestamps, run,
                                               last_speech)
        return [self._segment(piece, run, timestamps) for piece in timed], last_speech

    def _independent(self, result: WindowResult, number: int, offset: float, duration: float, timestamps: bool,
                     run: _Run, last_speech: float):
        words = result.decoded.extras.words if result.decoded.extras else None
        return independent_segments(result.decoded.tokens, number, offset, duration, timestamps,
                                    self.tokens.timestamp_begin, self.tokens.end_of_text,
                                    self.pipeline.chunk_frames(run.options.chunk_length),
                                    words, self._place_words(run.options), last_speech)

    def _place_words(self, options: TranscribeOptions):
        return partial(place_words, prepend=options.prepend_punctuations, append=options.append_punctuations)

    def _transcribe_speech(self, samples: np.ndarray, run: _Run, timestamps: bool = True) -> list[_TextSegment]:
        """The VAD path: speech windows (vad.py) decoded `vad_batch_size` at a time as rows of one batch, each on
        its own (with timestamps; without, a window is one segment spanning its speech); times mapped back to the
        file's timeline."""
        options = run.options
        vad = options.vad_options
        windows = speech_windows(samples, speech_regions(samples, vad),
                                 self.pipeline.chunk_samples(options.chunk_length),
                                 vad.speech_pad_ms * audio_io.SAMPLE_RATE // 1000)
        segments, hop = [], self.processor.feature_extractor.hop_length
        for begin in range(0, len(windows), options.vad_batch_size):
            if run.progress is not None:
                last = min(begin + options.vad_batch_size, len(windows))
                run.progress(begin / len(windows), f"transcribing speech windows {begin + 1}-{last} of {len(windows)}")
            group = windows[begin:begin + options.vad_batch_size]
            # words always: they place segments on the file's timeline (kept in the output only when asked)
            rows = [replace(self._window(self._window_features(window.samples, run), run, timestamps,
                                         run.prompts.initial or None, len(window.samples) // hop),
                            word_tokens=window_text_tokens(self.tokens.end_of_text)) for window in group]
            rows = rows[:1] + [replace(row, prefix=None) for row in rows[1:]]  # the prefix starts the first only
            first = len(run.results)
            for number, (window, result) in enumerate(zip(group, self._decode_windows(rows, run)), start=first):
                if result.silent:
                    continue
                timed, _ = self._independent(result, number, 0.0, audio_io.duration_seconds(window.samples),
                                             timestamps, run, 0.0)
                pieces = [part for piece in timed for part in on_file_timeline(piece, window)]
                if not timestamps:  # one segment a window, spanning its speech (faster-whisper's batched output)
                    pieces = [replace(timed[0], start=pieces[0].start, end=pieces[-1].end,
                                      words=tuple(word for piece in pieces for word in piece.words))]
                if not options.word_timestamps:
                    pieces = [replace(piece, words=()) for piece in pieces]
                finished = [self._segment(piece, run, timestamps) for piece in pieces]
                run.emit(finished, self.tokens.timestamp_begin)
                segments += finished
        return segments

    def _transcribe_sequential(self, samples: np.ndarray, run: _Run, is_long: bool, condition: bool,
                               timestamps: bool = True) -> list[_TextSegment]:
        """Whisper's own long-form algorithm (see longform.py); audio up to a window keeps the usual 30-s features
        (their first window's worth with a shorter chunk_length)."""
        sampling = run.options.sampling
        if condition and sampling.do_sample and sampling.temperature >= CONDITIONING_TEMPERATURE_LIMIT:
            condition = False
        recipe = run.options.recipe
        audio_frames = len(samples) // self.processor.feature_extractor.hop_length
        keep_words = run.options.word_timestamps
        # without word timestamps, long audio still aligns the words of a window the next one starts inside:
        # the next window starts at its last word's end (sequential.py)
        seek_words = (partial(seek_text_tokens, timestamp_begin=self.tokens.timestamp_begin,
                              end_of_text=self.tokens.end_of_text)
                      if is_long and timestamps and run.options.seek_to_words and not keep_words else None)

        def decode(window: torch.Tensor, previous: list[int] | None, real: int) -> WindowOutcome:
            frames = real if is_long else min(real, audio_frames)
            row = self._window(window, run, timestamps, previous, frames, True)
            row = row if seek_words is None else replace(row, word_tokens=seek_words)
            result = self._decode_windows([row], run)[0]
            extras = result.decoded.extras
            return WindowOutcome(result.decoded.tokens, skip=result.silent,
                                 reset_prompt=result.temperature > recipe.prompt_reset_on_temperature,
                                 words=extras.words if extras else None)

        def emit(pieces: list[TimedTokens]) -> None:
            run.emit([self._segment(piece, run, timestamps) for piece in pieces], self.tokens.timestamp_begin)

        frames = self.pipeline.chunk_frames(run.options.chunk_length)
        if run.options.whole_features:
            is_long = True
            features = self.faster_whisper_features(samples)
        else:
            features = self.pipeline.features(samples, whole=is_long)
        output = transcribe_sequential(features if is_long else features[..., :frames.window], decode,
                                       self.tokens.timestamp_begin, self.tokens.end_of_text, frames,
                                       condition, run.progress, initial_prompt=run.prompts.initial,
                                       place_words=self._place_words(run.options), with_frames=True,
                                       on_segments=emit if run.on_segment is not None else None,
                                       audio_seconds=audio_io.duration_seconds(samples),
                                       hallucination_silence_threshold=run.options.hallucination_silence_threshold,
                                       keep_words=keep_words)
        return [self._segment(piece, run, timestamps) for piece in output.segments]

    def faster_whisper_features(self, samples: np.ndarray) -> torch.Tensor:
        """faster-whisper's log-mel of all of `samples`: its frames of the audio, without the padding's own."""
        features = self.pipeline.features(np.pad(samples, (0, FASTER_WHISPER_PADDING)), whole=True)
        return features[..., : len(samples) // self.processor.feature_extractor.hop_length]

    def _window_features(self, samples: np.ndarray, run: _Run) -> torch.Tensor:
        """One window's features: openai's (the audio padded to 30 s), or faster-whisper's (whole_features)."""
        if not run.options.whole_features:
            return self.pipeline.features(samples)
        return window_features(self.faster_whisper_features(samples), 0,
                               self.pipeline.chunk_frames(run.options.chunk_length))[0]

    def _segment(self, piece: TimedTokens, run: _Run, timestamps: bool) -> _TextSegment:
        return _TextSegment(round(piece.start, 3), round(piece.end, 3), self.pipeline.segment_text(list(piece.tokens)),
                            piece.tokens if timestamps else None, piece.words, run.results[piece.window],
                            piece.tokens)

    def _text(self, segments: list[_TextSegment]) -> str:
        if all(segment.tokens is None for segment in segments):
            return "".join(segment.text for segment in segments)
        return self.pipeline.segment_text([token for segment in segments for token in segment.tokens or ()])


@dataclass
class _Run:
    """What one transcribe call accumulates across its windows."""

    language_id: int | None
    generator: torch.Generator | None
    stats: DecodeStats
    progress: Progress | None
    options: TranscribeOptions
    prompts: PromptTokens
    windows: CallWindows
    task: str = "transcribe"
    decode: WindowDecoder | None = None
    on_segment: SegmentListener | None = None
    language: str | None = None
    language_probability: float | None = None
    window_tokens: list[list[int]] = field(default_factory=list)
    results: list[WindowResult] = field(default_factory=list)  # per decoded window, in order

    def emit(self, segments: list[_TextSegment], timestamp_begin: int) -> None:
        if self.on_segment is not None:
            for segment in segments:
                if segment.text.strip():
                    self.on_segment(segment.output(timestamp_begin))


@dataclass(frozen=True)
class _Chunk:
    """A quiet-point window of one audio: where it starts and how long it is (s), its samples, its feature frames."""

    offset: float
    duration: float
    samples: np.ndarray
    frames: int


@dataclass(frozen=True)
class _TextSegment:
    start: float
    end: float
    text: str
    tokens: tuple[int, ...] | None = None
    words: tuple = ()
    window: WindowResult | None = None
    all_tokens: tuple[int, ...] = ()  # its generated ids, with or without timestamps

    def output(self, timestamp_begin: int) -> Segment:
        window = self.window
        if window is None:
            return Segment(self.start, self.end, self.text, self.all_tokens)
        return Segment(self.start, self.end, self.text, self.all_tokens, words=self.words,
                       avg_logprob=_rounded(window.avg_logprob), compression_ratio=round(window.compression_ratio, 4),
                       no_speech_prob=_rounded(window.no_speech_prob), temperature=window.temperature)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
