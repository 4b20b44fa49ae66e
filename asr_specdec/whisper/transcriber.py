"""Speculative Whisper: audio in, text + segments + telemetry out, through the one engine loop."""

from __future__ import annotations

import time
from dataclasses import replace
from functools import partial

import numpy as np
import torch

from ..core.drafter import Drafter
from ..core.stats import DecodeStats
from ..errors import ModelError, SpecdecError
from ..native import capabilities
from ..weights.mapped import trim_heap
from .arguments import call_options, constructor_options
from .call import Call, Progress, SegmentListener, faster_whisper_features
from .drafters import DrafterContext, build_drafter
from .io import audio as audio_io
from .loading import LoadedMain, load_model, resolve_device
from .longform import strategies
from .longform.hallucination import check_sequential
from .longform.strategies import TextSegment
from .model_options import ModelOptions
from .options import TranscribeOptions, check_batch, for_model
from .recipe.fallback import decode_with_fallback
from .recipe.window_extras import recipe_analysis
from .result import TranscriptionResult
from .runtime.compute import model_dtype, parse_compute_type
from .runtime.pipeline import Speculation, WindowDecoder, WindowPipeline


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
        dtype = model_dtype(parse_compute_type(model_options.compute_type, device), device)
        self.options = options  # this transcriber's defaults; a call's overrides are a copy
        model, loaded_processor, self.main_name = load_model(model_options.main, device, dtype)
        # what `auto` means depends on the model's width, which only the loaded model tells (the load's dtype does not)
        self.compute_type = parse_compute_type(model_options.compute_type, device,
                                               getattr(model.config, "d_model", None))
        processor = model_options.processor or loaded_processor
        if processor is None:
            raise ModelError("a Whisper model given as an object needs its processor: pass processor=...")
        shared = getattr(model_options.main, "pipeline", None)  # a LoadedMain's: the same models, already packed
        if shared is not None and shared.model is model and shared.processor is processor \
                and shared.compute == self.compute_type:
            self.pipeline = shared
        else:
            self.pipeline = WindowPipeline(model.eval(), processor, compute=self.compute_type,
                                           analysis=recipe_analysis)
        self.options = for_model(options, self.tokens.multilingual)
        # the default drafter follows the main decoder's precision: an int8 copy of an int8 decoder drafts no cheaper
        self.mode, self.mode_reason = model_options.resolved_drafter(device, self.compute_type.decoder)
        self.assistant_name = None
        # who drafts this transcriber's decodes, and how far: kept across its calls (an adaptive schedule learns)
        self.speculation = Speculation(model_options.drafter or self._make_drafter(model_options, device, dtype),
                                       model_options.draft_length())
        # what this transcriber is, as resolved: a variant is a `replace` of it (with `main` the loaded weights)
        self.model_options = replace(model_options, mode=self.mode, device=device, compute_type=self.compute_type)
        # which kernels run the main decoder: "native avx2" (the build), or "pytorch (cpu)"
        self.backend = (capabilities().description if self.runner.native is not None
                        else f"pytorch ({self.runner.device.type})")
        # what every result says it came from
        self._labels = {"mode": self.mode, "main_model": self.main_name, "assistant_model": self.assistant_name,
                        "compute_type": self.compute_type.name, "backend": self.backend}

    # the parts callers read: the main model, its processor and tokens, the lean decoder, the drafter
    model = property(lambda self: self.pipeline.model)
    processor = property(lambda self: self.pipeline.processor)
    tokens = property(lambda self: self.pipeline.tokens)
    runner = property(lambda self: self.pipeline.runner)
    drafter = property(lambda self: self.speculation.drafter)
    draft_length = property(lambda self: self.speculation.draft_length)
    # this transcriber's transcription defaults (self.options)
    task = property(lambda self: self.options.task)
    sampling = property(lambda self: self.options.sampling)
    max_new_tokens = property(lambda self: self.options.max_new_tokens or self.tokens.max_positions)
    language = property(lambda self: self.options.language)
    seed = property(lambda self: self.options.seed)
    timestamps = property(lambda self: self.options.timestamps)
    long_form = property(lambda self: self.options.long_form)
    condition_on_previous_text = property(lambda self: self.options.condition_on_previous_text)

    def loaded(self) -> LoadedMain:
        """The main model as loaded, for ModelOptions.main: a variant built on it reuses these weights (and this
        pipeline, at the same compute type: a variant differs in its drafting and transcription options only)."""
        return LoadedMain(self.model, self.processor, self.main_name, self.pipeline)

    def _make_drafter(self, options: ModelOptions, device: str, dtype):
        context = DrafterContext(self.model, self.processor.tokenizer, self.runner.weights, len(self.runner.layers),
                                 replace(options, mode=self.mode), self.language, self.task,
                                 partial(load_model, device=device, dtype=dtype))
        drafter = build_drafter(self.mode, context)
        self.assistant_name = context.assistant_name
        trim_heap()  # a drafter's packing frees its transient tensors: without this the heap keeps them resident
        return drafter

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
        options = for_model(call_options(options or self.options, language=language, task=task,
                                         timestamps=timestamps, return_timestamps=return_timestamps,
                                         long_form=long_form, condition_on_previous_text=condition_on_previous_text,
                                         **recipe_options), self.tokens.multilingual)
        if options.diarize is not None:
            return self._diarized(audio, sample_rate, options, progress, window_decoder, on_segment)
        samples = audio_io.load_audio(audio, sample_rate=sample_rate)
        timestamps = options.timestamps
        if timestamps is None and options.word_timestamps:
            timestamps = True
        long_form, condition = options.long_form, options.condition_on_previous_text
        is_long = len(samples) > self.pipeline.chunk_samples(options.chunk_length)
        call = Call.start(self.pipeline, self.speculation, options, Call.generator(options), progress, window_decoder,
                          on_segment)
        if options.hallucination_silence_threshold is not None:
            check_sequential(not options.vad_filter and long_form == "sequential" and (
                is_long or timestamps is not False))
        if options.vad_filter:
            segments = strategies.speech_only(call, samples, timestamps is not False)
        elif long_form == "chunked":  # audio up to a window too: one window, decoded once
            segments = strategies.chunked(call, samples, bool(timestamps))
        elif is_long or timestamps:
            # without timestamps, each 30-s window is one segment and the next one starts where it ends (openai's)
            segments = strategies.sequential(call, samples, is_long, condition, timestamps is not False)
        else:
            segments = strategies.chunked(call, samples, False)
        call.stats.total_seconds = time.perf_counter() - started
        call.report(1.0, "done")
        self.pipeline.call_ended()
        return self._result(call, segments, samples)

    def _result(self, call: Call, segments: list[TextSegment], samples: np.ndarray) -> TranscriptionResult:
        """One audio's result from its segments (the spoken ones kept) and what its call accumulated."""
        language = call.options.language
        detected = language if language else ("en" if not self.tokens.multilingual else call.language)
        spoken = [segment for segment in segments if segment.text.strip()]
        return TranscriptionResult(
            text=self._text(spoken), segments=[segment.output() for segment in spoken],
            window_tokens=call.window_tokens, stats=call.stats, language=detected,
            language_probability=call.language_probability if detected == call.language else 1.0,
            duration=audio_io.duration_seconds(samples), **self._labels)

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
        options = for_model(call_options(options or self.options, language=language, **overrides),
                            self.tokens.multilingual)
        check_batch(options)
        samples = [audio_io.load_audio(audio, sample_rate=sample_rate) for audio in audios]
        generator = Call.generator(options)
        runs = [Call.start(self.pipeline, self.speculation, options, generator) for _ in samples]
        timestamps = bool(options.timestamps if options.timestamps is not None else options.word_timestamps)
        plans = [strategies.chunk_plan(run, audio) for audio, run in zip(samples, runs)]
        # the first windows first where the rest keep their language (as a transcribe call's windows do)
        first_alone = self.tokens.multilingual and not options.language and not options.multilingual
        rounds = ([[(run, plan[:1]) for run, plan in zip(runs, plans)],
                   [(run, plan[1:]) for run, plan in zip(runs, plans)]] if first_alone else [list(zip(runs, plans))])
        for windows in rounds:
            rows = [(run, number, window) for run, plan in windows for number, window in plan]
            for begin in range(0, len(rows), batch_size):
                group = rows[begin:begin + batch_size]
                built = [run.window(run.features(window.samples), timestamps, audio_frames=window.frames,
                                    first=number == 0, previous=(run.prompts.initial or None) if number == 0 else None)
                         for run, number, window in group]
                results = decode_with_fallback(self.pipeline, built, options.recipe, DecodeStats(), runs[0].decode_rows)
                for (run, number, _), result in zip(group, results):
                    run.stats.add(result.decoded.stats)
                    run.record(result, number)
        results = []
        for audio, run, plan in zip(samples, runs, plans):
            segments, last_speech = [], 0.0
            for number, window in plan:
                pieces, last_speech = strategies.chunk_segments(run, number, window, timestamps, last_speech)
                segments += pieces
            results.append(self._result(run, segments, audio))
        self.pipeline.call_ended()
        return results

    def language_probabilities(self, features: torch.Tensor) -> list[tuple[str, float]]:
        """Every (language, probability) of one window's features, likeliest first."""
        return self.pipeline.language_probabilities(features)

    def decode_windows(self, windows: list, speculation: Speculation | None = None,
                       generator: torch.Generator | None = None) -> list:
        """Windows (runtime/pipeline.py's Window) decoded as the rows of one call, drafted by `speculation` (this
        transcriber's by default): what `window_decoder` stands in for (a front end that decodes a call's windows
        itself, e.g. under its own lock)."""
        return self.pipeline.decode(windows, speculation or self.speculation, generator)

    def features(self, samples: np.ndarray) -> torch.Tensor:
        """One window's log-mel features (the audio padded to 30 s), as a decode of `decode_windows` takes them."""
        return self.pipeline.features(samples)

    def forget_encoding(self) -> None:
        """Let the next call run its encoder: drop the encoding kept from the last call on these weights (a call
        of one window keeps it for a retry of the same audio; a timed comparison must not take it)."""
        self.pipeline.forget_encoding()

    def chunk_frames(self, chunk_length: int | None = None):
        """The time grid of a window of `chunk_length` seconds (None: the model's 30 s): runtime/frames.py."""
        return self.pipeline.chunk_frames(chunk_length)

    def call_windows(self, options: TranscribeOptions | None = None):
        """The window builder of a call with `options` (this transcriber's by default): call.py's CallWindows,
        for callers that decode windows of their own (a live stream)."""
        return Call.start(self.pipeline, self.speculation, options or self.options, None).windows

    def stream(self, **options):
        """A live transcription stream on these models, drafting each update from the last hypothesis (see
        streaming.py): `feed(samples)` audio as it arrives, get updates with committed and tentative text."""
        from .live.streaming import StreamingTranscriber

        return StreamingTranscriber(self, **options)

    def faster_whisper_features(self, samples: np.ndarray) -> torch.Tensor:
        """faster-whisper's log-mel of all of `samples` (call.py)."""
        return faster_whisper_features(self.pipeline, samples)

    def _text(self, segments: list[TextSegment]) -> str:
        if all(segment.tokens is None for segment in segments):
            return "".join(segment.text for segment in segments)
        return self.pipeline.segment_text([token for segment in segments for token in segment.tokens or ()])
