"""Models loaded once and shared by every request; transcription and comparison behind the limits.

A SpeculativeWhisper keeps per-request decoding state (its drafter, its dynamic draft length), so each
cached one is used by one request at a time; the models underneath are shared read-only by all of them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from contextlib import ExitStack
from dataclasses import astuple, replace
from pathlib import Path

import torch

from asr_specdec.core.modes import ASSISTANT_MODES
from asr_specdec.errors import SpecdecError
from asr_specdec.weights.whisper_models import LoadedWhisper, load_whisper, resolve_model_dir
from asr_specdec.whisper import Progress, SpeculativeWhisper, SpeedComparison, TranscriptionResult, compare_speeds

from .intake import read_audio, uploaded_path
from .pairing import assistant_choices, paired
from .profiles import ModelProfile, profile_from_directory, profile_from_model
from .settings import AppSettings, DecodeOptions, RecipeChoices

PLAIN_RECIPE = RecipeChoices()


def _no_progress(fraction: float, description: str) -> None:
    pass


class TranscriptionService:
    def __init__(self, settings: AppSettings, max_decoders: int = 8):
        self.settings = settings
        self.max_decoders = max_decoders  # each quantized-self decoder holds its own int8 copy
        self._models: dict[str, LoadedWhisper] = {}
        self._decoders: OrderedDict[tuple, tuple[SpeculativeWhisper, threading.Lock]] = OrderedDict()
        self._profiles: dict[str, ModelProfile] = {}
        self._cache_lock = threading.RLock()

    def _check_offered(self, spec: str) -> None:
        if spec not in self.settings.models:
            raise SpecdecError(f"model '{spec}' is not offered here (choose one of {', '.join(self.settings.models)})")

    def model(self, spec: str) -> LoadedWhisper:
        self._check_offered(spec)
        with self._cache_lock:
            if spec not in self._models:
                dtype = torch.float32 if self.settings.device == "cpu" else torch.float16
                self._models[spec] = load_whisper(spec, device=self.settings.device, dtype=dtype)
            return self._models[spec]

    def profile(self, spec: str) -> ModelProfile:
        """Vocabulary and languages of an offered model, from its config files when it has a local directory
        (no weights loaded), else from the loaded model."""
        self._check_offered(spec)
        with self._cache_lock:
            if spec not in self._profiles:
                self._profiles[spec] = self._read_profile(spec)
            return self._profiles[spec]

    def _read_profile(self, spec: str) -> ModelProfile:
        if spec not in self._models:
            location = resolve_model_dir(spec)
            if isinstance(location, Path):
                return profile_from_directory(location)
        return profile_from_model(self.model(spec).model)

    def assistants(self, main: str, mode: str) -> list[str]:
        """The assistants that can draft for `main` in `mode` (see pairing.py)."""
        return assistant_choices(main, mode, self.settings.models, lambda spec: self.profile(spec).vocab_size)

    def paired(self, options: DecodeOptions) -> tuple[DecodeOptions, str | None]:
        """Options whose assistant fits the mode, and a note for the user when they had to change."""
        return paired(options, self.settings.models, lambda spec: self.profile(spec).vocab_size,
                      self.settings.default_assistant)

    def decoder(self, options: DecodeOptions) -> tuple[SpeculativeWhisper, threading.Lock]:
        """The cached decoder for these options and the lock its user must hold, built on first use."""
        options = options.normalized()
        key = astuple(options)
        with self._cache_lock:
            if key not in self._decoders:
                assistant = self.model(options.assistant) if options.mode in ASSISTANT_MODES else None
                decoder = SpeculativeWhisper.from_options(
                    options.model_options(self.model(options.main), assistant, self.settings.device),
                    options.transcribe_options())
                self._decoders[key] = (decoder, threading.Lock())
                if options.mode is None:  # the mode it chose asks for the same decoder
                    self._decoders[astuple(replace(options, mode=decoder.mode).normalized())] = self._decoders[key]
                while len(self._decoders) > self.max_decoders:
                    self._decoders.popitem(last=False)
            self._decoders.move_to_end(key)
            return self._decoders[key]

    def load_defaults(self) -> None:
        """Build the decoder the page's defaults ask for (the default assistant only where it fits the default mode);
        with no default mode set, the page then offers the one the project chose for the loaded main model."""
        options = self.paired(DecodeOptions(self.settings.default_main, self.settings.default_mode))[0]
        decoder, _ = self.decoder(options)
        if self.settings.default_mode is None:
            self.settings = replace(self.settings, default_mode=decoder.mode)

    def read(self, upload: str | None):
        return read_audio(uploaded_path(upload), self.settings.max_upload_bytes, self.settings.max_audio_seconds)

    def transcribe(self, upload: str | None, options: DecodeOptions, report: Progress = _no_progress,
                   timestamps: bool | None = None, recipe: RecipeChoices = PLAIN_RECIPE) -> TranscriptionResult:
        """`timestamps`: True for timed segments (subtitles); None leaves it to the length of the audio."""
        return self._run(options, self.read(upload), report, timestamps, recipe)

    def compare(self, upload: str | None, options: DecodeOptions, report: Progress = _no_progress,
                timestamps: bool | None = None, recipe: RecipeChoices = PLAIN_RECIPE) -> SpeedComparison:
        """Plain greedy against `options`' decoding on the same audio, timed as a benchmark does (each warmed up,
        interleaved repeats, medians, every run encoding the audio: asr_specdec.whisper.comparison)."""
        samples = self.read(upload)
        report(0.0, "loading models")
        plain, plain_in_use = self.decoder(replace(options, mode="off"))
        speculative, speculative_in_use = self.decoder(options)
        with ExitStack() as held:
            for lock in dict.fromkeys((plain_in_use, speculative_in_use)):  # mode "off" is one decoder for both
                held.enter_context(lock)
            return compare_speeds(plain, speculative, samples, timestamps=timestamps, **recipe.as_arguments(),
                                  on_run=lambda done, total, side: report(
                                      done / total, f"{'plain' if side == 'plain' else options.mode}: "
                                      f"run {done + 1} of {total}"))

    def _run(self, options: DecodeOptions, samples, report: Progress, timestamps: bool | None = None,
             recipe: RecipeChoices = PLAIN_RECIPE) -> TranscriptionResult:
        report(0.0, "loading models")
        decoder, in_use = self.decoder(options)
        with in_use:
            return decoder.transcribe(samples, progress=report, timestamps=timestamps, **recipe.as_arguments())

    def tokenizer(self, spec: str):
        return self.model(spec).processor.tokenizer
