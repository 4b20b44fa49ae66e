"""faster-whisper 1.2's `WhisperModel` and `BatchedInferencePipeline` on speculative Whisper: the same signatures,
defaults and return types, mapped onto one SpeculativeWhisper (the engine is reused, never copied).

`transcribe` returns `(segments, info)`: `info` (language and its probability, durations, the options used) is
known at once; `segments` is a lazy generator that decodes window by window as it is read (lazy.py). Every
option either does what it does in faster-whisper or is refused by name (plan.py). What differs is listed in the
README ("Coming from faster-whisper").
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import replace

import numpy as np

from ..errors import SpecdecError
from ..whisper.io import audio as audio_io
from ..whisper.longform.sequential import window_features
from ..whisper.longform.vad import VadOptions
from ..whisper.options import TranscribeOptions, vad_options
from ..whisper.recipe.words import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS
from .audio import decode
from .lazy import lazy_segments
from .plan import UnsupportedOption, clip_ranges, plan_call
from .timeline import SpeechTimeline, joined_chunks
from .types import Segment, TranscriptionInfo, Word
from .utils import model_spec
from .vad import faster_whisper_regions
from .workers import Workers

DEFAULT_TEMPERATURES = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
WINDOW_SECONDS = 30
FRAMES_PER_SECOND = 100  # feature frames a second: a hop of 160 samples at 16 kHz
# faster-whisper's compute types, as ours (compute.py); "default" and "auto" are the project's choice for the device
COMPUTE_TYPES = {"default": None, "auto": None, "float32": "float32", "float16": "float16", "bfloat16": "bfloat16",
                 "int8": "int8", "int8_float32": "int8"}


class WhisperModel:
    """A Whisper model as faster-whisper's `WhisperModel`, decoding speculatively: the same text as plain greedy
    decoding, byte for byte, in less time.

    `model_size_or_path`: one of available_models() (our offline packs `base` and `tiny.en` need no network), a
    faster-whisper (CTranslate2) model directory, a transformers directory, or a model-hub id. Our own keyword
    extras: `mode` (the drafter; by default the project's, core/modes.py), `assistant_model`, `num_draft_tokens`,
    `draft_schedule`, and any other SpeculativeWhisper option (e.g. `silence_threshold`).
    """

    def __init__(self, model_size_or_path: str, device: str = "auto", device_index: int | list[int] = 0,
                 compute_type: str = "default", cpu_threads: int = 0, num_workers: int = 1,
                 download_root: str | None = None, local_files_only: bool = False, files: dict | None = None,
                 revision: str | None = None, use_auth_token: str | bool | None = None, *, mode: str | None = None,
                 assistant_model=None, num_draft_tokens: int | None = None, draft_schedule: str | None = None,
                 **speculative_options):
        import torch

        from ..whisper.arguments import constructor_options
        from ..whisper.transcriber import SpeculativeWhisper

        if files:
            raise UnsupportedOption("files= (a model held in memory) is not supported: give a model directory")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
            raise SpecdecError(f"num_workers must be 1 or more, not {num_workers!r}")
        spec, from_hub = model_spec(model_size_or_path)
        if from_hub:
            for name, value in (("download_root", download_root), ("revision", revision),
                                ("use_auth_token", use_auth_token), ("local_files_only", local_files_only or None)):
                if value is not None:
                    raise UnsupportedOption(f"{name}= is not supported for a model from the hub ('{spec}'): give "
                                            "a local model directory or an offline pack (base, tiny.en)")
        if cpu_threads < 0:
            raise SpecdecError(f"cpu_threads must be 0 (the default) or more, not {cpu_threads}")
        if cpu_threads:
            torch.set_num_threads(cpu_threads)  # process-wide in torch
        # faster-whisper's model arguments and our extras mapped into the two options objects, here at the edge
        self._attach(SpeculativeWhisper.from_options(*constructor_options(
            spec, mode=mode, assistant_model=assistant_model, num_draft_tokens=num_draft_tokens,
            draft_schedule=draft_schedule, device=_device(device, device_index),
            compute_type=_compute_type(compute_type), **speculative_options)), num_workers)

    @classmethod
    def around(cls, speculative, num_workers: int = 1) -> WhisperModel:
        """This drop-in around a SpeculativeWhisper already built (e.g. a variant of another's weights)."""
        model = cls.__new__(cls)
        model._attach(speculative, num_workers)
        return model

    def _attach(self, speculative, num_workers: int) -> None:
        self.speculative = speculative
        # who decodes: num_workers transcribers on these weights (workers.py); with one, decodes take turns
        self._workers = Workers(speculative, num_workers)

    @property
    def supported_languages(self) -> list[str]:
        """The languages the model knows (codes), or ["en"] for an English-only model."""
        tokens = self.speculative.tokens
        if not tokens.multilingual:
            return ["en"]
        return sorted(key.strip("<|>") for key in tokens.language_ids)  # faster-whisper's order: by code

    def detect_language(self, audio: np.ndarray | None = None, features=None, vad_filter: bool = False,
                        vad_parameters: dict | VadOptions | None = None, language_detection_segments: int = 1,
                        language_detection_threshold: float = 0.5) -> tuple[str, float, list[tuple[str, float]]]:
        """(language, its probability, every (language, probability) likeliest first) from the first
        `language_detection_segments` 30-s windows of `audio` (16-kHz samples) or of log-mel `features`: the first
        window whose likeliest language is above the threshold decides, else the language most windows chose."""
        return self._detect_language(audio, features, vad_filter, vad_parameters, language_detection_segments,
                                     language_detection_threshold)

    def _detect_language(self, audio, features, vad_filter: bool, vad_parameters, language_detection_segments: int,
                         language_detection_threshold: float | None, chunk_length: int = WINDOW_SECONDS):
        """detect_language on windows `chunk_length` seconds long (transcribe's, as faster-whisper's detects on
        its chunk_length windows)."""
        if audio is None and features is None:
            raise SpecdecError("detect_language needs audio or features")
        if not self.speculative.tokens.multilingual:
            return "en", 1.0, [("en", 1.0)]
        windows = self._detection_windows(audio, features, vad_filter, vad_parameters,
                                          max(1, language_detection_segments), chunk_length)
        votes: dict[str, list[float]] = {}
        for window in windows:
            ranked = self._workers.language_probabilities(window)
            language, probability = ranked[0]
            if language_detection_threshold is None or probability > language_detection_threshold:
                break
            votes.setdefault(language, []).append(probability)
        else:
            language = max(votes, key=lambda code: len(votes[code]))
            probability = max(votes[language])
        return language, probability, ranked

    def transcribe(self, audio, language: str | None = None, task: str = "transcribe", log_progress: bool = False,
                   beam_size: int = 5, best_of: int = 5, patience: float = 1, length_penalty: float = 1,
                   repetition_penalty: float = 1, no_repeat_ngram_size: int = 0,
                   temperature: float | list[float] | tuple[float, ...] = DEFAULT_TEMPERATURES,
                   compression_ratio_threshold: float | None = 2.4, log_prob_threshold: float | None = -1.0,
                   no_speech_threshold: float | None = 0.6, condition_on_previous_text: bool = True,
                   prompt_reset_on_temperature: float = 0.5, initial_prompt=None, prefix: str | None = None,
                   suppress_blank: bool = True, suppress_tokens: list[int] | None = [-1],  # noqa: B006
                   without_timestamps: bool = False, max_initial_timestamp: float = 1.0,
                   word_timestamps: bool = False, prepend_punctuations: str = PREPEND_PUNCTUATIONS,
                   append_punctuations: str = APPEND_PUNCTUATIONS, multilingual: bool = False,
                   vad_filter: bool = False, vad_parameters: dict | VadOptions | None = None,
                   max_new_tokens: int | None = None, chunk_length: int | None = None,
                   clip_timestamps: str | list[float] = "0", hallucination_silence_threshold: float | None = None,
                   hotwords: str | None = None, language_detection_threshold: float | None = 0.5,
                   language_detection_segments: int = 1, *, diarize: bool | int | None = None):
        """Transcribe a path, a file-like object or 16-kHz samples: (lazy segments, TranscriptionInfo), with
        faster-whisper's arguments and defaults (beam search with 5 beams unless beam_size=1). This build's extra:
        `diarize=True` (or a number of speakers) gives each segment and word a `speaker`."""
        given = dict(locals())
        del given["self"]
        return self._transcribe(batch_size=None, **given)

    # the shared body of WhisperModel.transcribe and BatchedInferencePipeline.transcribe
    def _transcribe(self, audio, **given):
        """`given`: faster-whisper's transcribe keywords (`batch_size` None for WhisperModel's), mapped and checked
        by plan_call before any audio is read."""
        batch_size = given["batch_size"]
        batched = batch_size is not None
        multilingual = given["multilingual"]
        if multilingual and not self.speculative.tokens.multilingual:
            warnings.warn("this model is English-only: multilingual=True is set to False", stacklevel=3)
            multilingual = False
        call, used = plan_call(self.speculative.options, given, self.speculative.tokens, multilingual)
        chunk = call.chunk_length or WINDOW_SECONDS  # faster-whisper's: the window's seconds
        samples = self._samples(audio)
        duration = audio_io.duration_seconds(samples)
        clips = clip_ranges(given["clip_timestamps"], duration)
        vad = timeline = None
        speech = samples
        if batched and clips is None and not given["vad_filter"]:
            if duration > chunk:
                raise SpecdecError("no clips to decode: set vad_filter=True or give clip_timestamps (batched "
                                   f"transcription of audio over chunk_length, {chunk} s)")
        elif given["vad_filter"] and clips is None:
            vad, max_speech = _vad_options(given["vad_parameters"], batched, chunk)
            regions = faster_whisper_regions(samples, vad, max_speech)
            speech = np.concatenate([samples[start:end] for start, end in regions]) if regions else samples[:0]
            # faster-whisper's: the joined speech decoded as one audio (batched: in chunks of up to chunk_length
            # seconds of it, each on its own), times mapped back to the audio's
            timeline = SpeechTimeline(regions) if regions else None
            if batched:
                clips = joined_chunks([end - start for start, end in regions], chunk)
            samples = speech
        duration_after_vad = audio_io.duration_seconds(speech)
        detection_audio = speech if clips is None or vad is not None else \
            samples[round(clips[0][0] * audio_io.SAMPLE_RATE):]
        language, probability, all_probabilities = self._language(
            call.language, detection_audio, given["language_detection_threshold"],
            given["language_detection_segments"], chunk)
        if not multilingual:
            call = replace(call, language=language)
        if batched and clips is None and vad is None:
            clips = [(0.0, duration)]
        segments = self._segments(samples, clips, call, given["log_progress"], duration, batched, timeline)
        info = TranscriptionInfo(language=language, language_probability=probability, duration=duration,
                                 duration_after_vad=duration_after_vad, all_language_probs=all_probabilities,
                                 transcription_options=used, vad_options=vad)
        return segments, info

    def _segments(self, samples: np.ndarray, clips, call: TranscribeOptions, log_progress: bool, duration: float,
                  batched: bool, timeline: SpeechTimeline | None = None):
        whisper, end_of_text = self.speculative, self.speculative.tokens.end_of_text
        parts = [(0.0, samples)] if clips is None else [
            (start, samples[round(start * audio_io.SAMPLE_RATE): round(end * audio_io.SAMPLE_RATE)])
            for start, end in clips]
        if batched and clips is not None:  # faster-whisper decodes a clip's first chunk_length seconds only
            chunk = call.chunk_length or WINDOW_SECONDS
            parts = [(start, part[: chunk * audio_io.SAMPLE_RATE]) for start, part in parts]

        def transcribe(emit) -> None:
            from tqdm import tqdm

            numbers = itertools.count(1)
            previous: list[int] = []
            clip_call = call
            with tqdm(total=round(duration, 2), unit="s", disable=not log_progress) as bar:
                for start, part in parts:
                    if not len(part):
                        continue
                    arguments = clip_call
                    if previous and clip_call.condition_on_previous_text:
                        arguments = replace(clip_call, initial_prompt=tuple(previous[-whisper.tokens.prompt_limit:]))
                    length = audio_io.duration_seconds(part)

                    def progress(fraction: float, _what: str, start=start, length=length) -> None:
                        bar.update(max(0.0, round(start + fraction * length, 2) - bar.n))

                    result = whisper.transcribe(
                        part, window_decoder=self._decode, progress=progress,
                        on_segment=lambda segment, start=start: emit(_segment(next(numbers), segment, start,
                                                                              timeline, batched)),
                        options=arguments)
                    previous = [token for token in result.tokens if token < end_of_text]
                    clip_call = replace(clip_call, prefix=None)  # the prefix starts the first clip only

        return lazy_segments(transcribe)

    def _decode(self, windows, speculation, generator=None):
        return self._workers.decode_windows(windows, speculation, generator)

    def _language(self, language: str | None, samples: np.ndarray, threshold: float | None, segments: int,
                  chunk_length: int = WINDOW_SECONDS) -> tuple[str, float, list[tuple[str, float]] | None]:
        tokens = self.speculative.tokens
        if not tokens.multilingual:  # the options said "en" (options.for_model)
            return "en", 1.0, None
        if language is not None:
            tokens.language_token(language)  # an unknown language is an error now, not at the first segment
            return language, 1.0, None
        return self._detect_language(samples, None, False, None, segments, threshold, chunk_length)

    def _samples(self, audio) -> np.ndarray:
        """16-kHz mono samples of a path, a file-like object or an array (an empty array stays empty)."""
        if isinstance(audio, np.ndarray) and audio.size == 0:
            return np.zeros(0, dtype=np.float32)
        if isinstance(audio, np.ndarray):
            return audio_io.load_audio(audio)
        return decode(audio)  # as faster-whisper decodes a file (PyAV)

    def _detection_windows(self, audio, features, vad_filter: bool, vad_parameters, segments: int,
                           chunk_length: int = WINDOW_SECONDS) -> list:
        import torch

        frames = self.speculative.chunk_frames(chunk_length)
        window_frames = frames.window
        if audio is not None:
            samples = self._samples(audio)
            if vad_filter:
                regions = faster_whisper_regions(samples, *_vad_options(vad_parameters, batched=False))
                samples = np.concatenate([samples[start:end] for start, end in regions]) if regions else samples[:0]
            if not len(samples):
                samples = np.zeros(audio_io.SAMPLE_RATE, dtype=np.float32)  # something to detect on, as there
            # faster-whisper's features of the whole audio (the first window's are the decode's: one encoding)
            whole = self.speculative.faster_whisper_features(samples)
            return [window_features(whole, begin, frames)[0]
                    for begin in range(0, min(whole.shape[-1], segments * window_frames), window_frames)]
        features = torch.as_tensor(np.asarray(features), dtype=torch.float32, device="cpu")  # each window moves
        features = features if features.dim() == 3 else features.unsqueeze(0)
        features = features[..., : segments * window_frames]
        windows = []
        for begin in range(0, max(features.shape[-1], 1), window_frames):
            window = features[..., begin: begin + window_frames]
            window = torch.nn.functional.pad(window, (0, frames.padded - window.shape[-1]))
            windows.append(window.to(self.speculative.runner.device))
        return windows


class BatchedInferencePipeline:
    """faster-whisper's batched transcription: speech (VAD) or clips decoded as rows of one batch, `batch_size`
    at a time, each window on its own (no conditioning, one temperature), with every option WhisperModel takes."""

    def __init__(self, model: WhisperModel):
        self.model = model

    def transcribe(self, audio, language: str | None = None, task: str = "transcribe", log_progress: bool = False,
                   beam_size: int = 5, best_of: int = 5, patience: float = 1, length_penalty: float = 1,
                   repetition_penalty: float = 1, no_repeat_ngram_size: int = 0,
                   temperature: float | list[float] | tuple[float, ...] = DEFAULT_TEMPERATURES,
                   compression_ratio_threshold: float | None = 2.4, log_prob_threshold: float | None = -1.0,
                   no_speech_threshold: float | None = 0.6, condition_on_previous_text: bool = True,
                   prompt_reset_on_temperature: float = 0.5, initial_prompt=None, prefix: str | None = None,
                   suppress_blank: bool = True, suppress_tokens: list[int] | None = [-1],  # noqa: B006
                   without_timestamps: bool = True, max_initial_timestamp: float = 1.0,
                   word_timestamps: bool = False, prepend_punctuations: str = PREPEND_PUNCTUATIONS,
                   append_punctuations: str = APPEND_PUNCTUATIONS, multilingual: bool = False,
                   vad_filter: bool = True, vad_parameters: dict | VadOptions | None = None,
                   max_new_tokens: int | None = None, chunk_length: int | None = None,
                   clip_timestamps: list[dict] | None = None, hallucination_silence_threshold: float | None = None,
                   batch_size: int = 8, hotwords: str | None = None,
                   language_detection_threshold: float | None = 0.5, language_detection_segments: int = 1, *,
                   diarize: bool | int | None = None):
        """(lazy segments, TranscriptionInfo), with faster-whisper's batched defaults (VAD on, no timestamps)."""
        given = dict(locals())
        del given["self"]
        if batch_size < 1:
            raise SpecdecError(f"batch_size must be at least 1, not {batch_size}")
        return self.model._transcribe(**given)


def _segment(number: int, segment, offset: float, timeline: SpeechTimeline | None = None,
             batched: bool = False) -> Segment:
    """One of our segments (formats.Segment) as faster-whisper's, `offset` seconds later (on the joined speech's
    `timeline` mapped back to the audio's). faster-whisper's batched pipeline places a clip's words from its first
    feature frame (the offset cut down to 10 ms) and its segments from the offset itself; its seek is that frame."""
    frame = int(offset * FRAMES_PER_SECOND)
    word_offset, places = (frame / FRAMES_PER_SECOND, 2) if batched else (offset, 3)
    start, end = round(segment.start + offset, 3), round(segment.end + offset, 3)
    words = [Word(round(word.start + word_offset, places), round(word.end + word_offset, places), word.word,
                  word.probability, word.speaker) for word in segment.words] if segment.words else None
    converted = Segment(id=number, seek=frame if batched else round(start * 100), start=start, end=end,
                        text=segment.text,
                        tokens=list(segment.tokens), avg_logprob=segment.avg_logprob,
                        compression_ratio=segment.compression_ratio, no_speech_prob=segment.no_speech_prob,
                        words=words, temperature=segment.temperature, speaker=segment.speaker)
    return converted if timeline is None else timeline.restore(converted)


def _vad_options(parameters, batched: bool, chunk_length: int = WINDOW_SECONDS) -> tuple[VadOptions, float]:
    """faster-whisper's VAD options and its limit on a speech region's length: a VadOptions as given; else none
    unless given; batched, chunk_length seconds whatever was given, and 160-ms silences when nothing was given."""
    if isinstance(parameters, VadOptions):
        return parameters, parameters.max_speech_duration_s
    if batched:
        values = {"min_silence_duration_ms": 160} if parameters is None else dict(parameters)
        values["max_speech_duration_s"] = chunk_length
        return vad_options(values), chunk_length
    options = vad_options(parameters)
    return options, options.max_speech_duration_s if "max_speech_duration_s" in (parameters or {}) else float("inf")


def _device(device: str, device_index: int | list[int]) -> str:
    import torch

    if isinstance(device_index, (list, tuple)):
        if len(device_index) != 1:
            raise UnsupportedOption(f"device_index={list(device_index)}: one device per model here")
        device_index = device_index[0]
    if device == "auto":
        return f"cuda:{device_index}" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise SpecdecError(f"device='{device}': no CUDA GPU is available here (use device='cpu' or 'auto')")
        return device if ":" in device else f"cuda:{device_index}"
    raise SpecdecError(f"unknown device '{device}': use 'cpu', 'cuda' or 'auto'")


def _compute_type(name: str) -> str | None:
    if name in COMPUTE_TYPES:
        return COMPUTE_TYPES[name]
    if ":" in name:  # ours, ENCODER:DECODER
        return name
    raise UnsupportedOption(f"compute_type='{name}' is not supported: use one of {', '.join(COMPUTE_TYPES)} "
                            "(or ours, ENCODER:DECODER such as int8:float32)")

