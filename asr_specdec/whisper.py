"""Speculative Whisper: audio in, text + segments + telemetry out, through the one engine loop."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from . import audio as audio_io
from .decoder import DecoderTarget, KVCache, WhisperDecoderRunner
from .draft_length import DEFAULT_DRAFT_TOKENS, DraftLength
from .drafters import (
    MODES,
    AssistantDrafter,
    DraftContext,
    Drafter,
    EarlyExitDrafter,
    PromptLookupDrafter,
    QuantizedSelfDrafter,
    UniversalDrafter,
)
from .drafters.assistant import check_same_device
from .engine import GenerationSettings, generate
from .errors import ModelError, SpecdecError
from .formats import Segment
from .logits import Sampling
from .stats import DecodeStats
from .whisper_tokens import WhisperTokens

Progress = Callable[[float, str], None]  # (fraction done, what is happening)


@dataclass
class TranscriptionResult:
    text: str
    segments: list[Segment]
    window_tokens: list[list[int]]  # generated ids per 30-second window (ending with end-of-text if produced)
    stats: DecodeStats
    language: str | None
    duration: float
    mode: str
    main_model: str
    assistant_model: str | None = None
    timings: dict = field(default_factory=dict)

    @property
    def tokens(self) -> list[int]:
        return [token for window in self.window_tokens for token in window]


def _load(spec, device, dtype):
    """(model, processor, name) from a spec string, a LoadedWhisper, or a (model, processor) pair."""
    if isinstance(spec, str):
        from .models import load_whisper

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


class SpeculativeWhisper:
    """Transcribe with a main Whisper model, optionally verified against a drafter.

    Greedy output is exactly the main model's greedy output whatever the drafter; sampling output has
    exactly the main model's distribution. Accepts transformers' argument names (`assistant_model`,
    `num_assistant_tokens`, `prompt_lookup_num_tokens`, `assistant_early_exit`, `assistant_tokenizer`)
    and the aliases `draft_model` / `num_draft_tokens`.
    """

    def __init__(self, main="base", drafter: str | Drafter | None = None, *, mode: str | None = None,
                 assistant_model=None, draft_model=None, assistant_tokenizer=None, processor=None,
                 num_assistant_tokens: int | None = None, num_draft_tokens: int | None = None,
                 dynamic: bool = False, assistant_confidence_threshold: float = 0.0,
                 prompt_lookup_num_tokens: int | None = None, assistant_early_exit: int | None = None,
                 do_sample: bool = False, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                 seed: int | None = None, language: str | None = None, task: str = "transcribe",
                 device: str = "cpu", dtype: torch.dtype | None = None, max_new_tokens: int | None = None):
        dtype = dtype or torch.float32
        self.model, loaded_processor, self.main_name = _load(main, device, dtype)
        self.processor = processor or loaded_processor
        if self.processor is None:
            raise ModelError("a Whisper model given as an object needs its processor: pass processor=...")
        self.model.eval()
        self.tokens = WhisperTokens.from_model(self.model)
        self.runner = WhisperDecoderRunner(self.model)
        self.language, self.task = language, task
        self.sampling = Sampling(do_sample, temperature, top_k, top_p)
        self.seed = seed
        self.max_new_tokens = max_new_tokens or self.tokens.max_positions
        self.draft_length = DraftLength(num_draft_tokens or num_assistant_tokens or DEFAULT_DRAFT_TOKENS,
                                        dynamic=dynamic)

        assistant_model = assistant_model if assistant_model is not None else draft_model
        if isinstance(drafter, Drafter):
            self.mode, self.drafter, self.assistant_name = drafter.name, drafter, None
            return
        self.mode = resolve_mode(drafter or mode, assistant_model, assistant_tokenizer,
                                 prompt_lookup_num_tokens, assistant_early_exit)
        self.assistant_name = None
        if self.mode == "prompt-lookup" and prompt_lookup_num_tokens:
            self.draft_length = DraftLength(prompt_lookup_num_tokens, dynamic=dynamic)
        self.drafter = self._make_drafter(assistant_model, assistant_tokenizer, assistant_confidence_threshold,
                                          assistant_early_exit, device, dtype)

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
        language = self.language or "en"
        prompt_length = len(self._prompt(self.tokens.language_ids.get("<|en|>")))
        return UniversalDrafter(model, tokenizer, self.processor.tokenizer, prompt_length, language=language,
                                task=self.task, confidence_threshold=threshold)

    def _prompt(self, language_id: int | None) -> list[int]:
        return self.tokens.prompt(language_id, self.task)

    def _features(self, samples: np.ndarray) -> torch.Tensor:
        features = self.processor.feature_extractor(samples, sampling_rate=audio_io.SAMPLE_RATE,
                                                    return_tensors="pt").input_features
        return features.to(self.runner.device, self.runner.dtype)

    def detect_language(self, cache: KVCache) -> tuple[int, str]:
        """The most likely language token after start-of-transcript, as transformers' generate picks it."""
        ids = torch.tensor([[self.tokens.start_of_transcript]], device=self.runner.device)
        logits = self.runner.forward(cache, ids, 0)[0, -1]
        candidates = torch.tensor(list(self.tokens.language_ids.values()), device=logits.device)
        best = int(candidates[logits[candidates].argmax()])
        code = next(key for key, value in self.tokens.language_ids.items() if value == best)
        return best, code.strip("<|>")

    def _decode_window(self, samples: np.ndarray, language_id: int | None, generator, stats: DecodeStats):
        started = time.perf_counter()
        features = self._features(samples)
        with torch.inference_mode():
            encoder_output = self.model.model.encoder(features).last_hidden_state
            cross_states = self.runner.cross_attention_states(encoder_output)
            cache = self.runner.new_cache(encoder_output, cross_states=cross_states)
            stats.encoder_seconds += time.perf_counter() - started
            language = None
            if self.tokens.multilingual and language_id is None:
                language_id, language = self.detect_language(cache)
            prompt = self._prompt(language_id)
            settings = GenerationSettings(
                eos_token_id=self.tokens.end_of_text, max_new_tokens=self.max_new_tokens,
                rules=self.tokens.rules(len(prompt)), sampling=self.sampling, draft_length=self.draft_length)
            if self.drafter is not None:
                drafter_started = time.perf_counter()
                self.drafter.start(DraftContext(
                    rules=settings.rules, sampling=self.sampling, max_positions=cache.max_positions,
                    eos_token_id=self.tokens.end_of_text, generator=generator, encoder_output=encoder_output,
                    input_features=features, main_cache=cache, main_cross_states=cross_states))
                stats.draft_seconds += time.perf_counter() - drafter_started
            tokens, window_stats = generate(DecoderTarget(self.runner, cache), prompt, settings,
                                            self.drafter, generator)
        stats.add(window_stats)
        return tokens, language_id, language

    def transcribe(self, audio, sample_rate: int | None = None, language: str | None = None,
                   task: str | None = None, progress: Progress | None = None) -> TranscriptionResult:
        """Transcribe a path, encoded bytes or a sample array (give `sample_rate` unless it is 16 kHz).

        `progress(fraction_done, description)` is called before each 30-second window and at the end.
        """
        started = time.perf_counter()
        samples = audio_io.load_audio(audio, sample_rate=sample_rate)
        if task is not None and task != self.task:
            self.task = task
        language = language or self.language
        language_id = self.tokens.language_token(language) if (language and self.tokens.multilingual) else None
        detected = language if language else ("en" if not self.tokens.multilingual else None)
        generator = None
        if self.sampling.do_sample:
            generator = torch.Generator(device="cpu")
            generator.manual_seed(self.seed if self.seed is not None else torch.seed())
        stats = DecodeStats()
        segments, window_tokens = [], []
        duration = audio_io.duration_seconds(samples)
        windows = audio_io.split_long_audio(samples)
        for index, (offset, window) in enumerate(windows):
            if progress is not None:
                progress(index / len(windows), f"transcribing window {index + 1} of {len(windows)}")
            tokens, language_id, found = self._decode_window(window, language_id, generator, stats)
            detected = detected or found
            window_tokens.append(tokens)
            text = self.processor.tokenizer.decode(tokens, skip_special_tokens=True).strip()
            if text:
                end = offset + audio_io.duration_seconds(window)
                segments.append(Segment(round(offset, 3), round(end, 3), text))
        stats.total_seconds = time.perf_counter() - started
        if progress is not None:
            progress(1.0, "done")
        return TranscriptionResult(
            text=" ".join(segment.text for segment in segments), segments=segments, window_tokens=window_tokens,
            stats=stats, language=detected, duration=duration, mode=self.mode, main_model=self.main_name,
            assistant_model=self.assistant_name)
