"""How to transcribe, in one frozen value: language and task, sampling, timestamps, long form, conditioning, and
the transcription recipe (word timestamps, fallback, no-speech, prompts, VAD); and the prompt tokens they make.
A transcriber keeps one (its defaults); each call's overrides are a copy (`with_overrides`, `dataclasses.replace`):
nothing is stored on a shared object. What the model is lives in model_options.py."""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field, fields, replace

from ..core.logits import Sampling
from ..errors import OptionError, SpecdecError
from .longform.vad import VadOptions
from .recipe.fallback import DEFAULT_TEMPERATURES, Recipe, check_temperatures, openai_ladder
from .recipe.words import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS
from .runtime.tokens import Suppression
from .speakers.options import SpeakerOptions, speaker_options


class PromptTruncated(UserWarning):
    """A prompt longer than Whisper's prompt limit was cut to its last tokens, as openai does."""


LONG_FORM_MODES = ("sequential", "chunked")
MAX_CHUNK_SECONDS = 30  # Whisper's window: 3000 feature frames, 1500 encoder positions


@dataclass(frozen=True)
class TranscribeOptions:
    language: str | None = None  # the spoken language (e.g. "en"); None: detected
    task: str = "transcribe"  # or "translate" (to English)
    sampling: Sampling = field(default_factory=Sampling)  # the main model's decoding: greedy unless do_sample
    seed: int | None = None  # the random source of sampling and fallback retries; None: a fresh one
    # decode with timestamp tokens: None decides by the audio (over 30 s, or word timestamps: with)
    timestamps: bool | None = None
    # Whisper's sequential windows (each seeking where the last one's segments end), or "chunked": windows cut at
    # quiet points, each decoded once
    long_form: str = "sequential"

    condition_on_previous_text: bool = False  # prompt each window with the text before it (openai's default: on)
    # long audio: a window the next one starts inside hands over at its last word's end (aligned), not at its
    # closing timestamp, which may fall inside the next utterance's first word; False: openai's/transformers' seek
    seek_to_words: bool = True
    word_timestamps: bool = False
    vad_filter: bool = False
    vad_options: VadOptions = field(default_factory=VadOptions)
    vad_batch_size: int = 8  # speech windows decoded together as rows of one batch
    initial_prompt: str | tuple[int, ...] | None = None  # text (or token ids) the first window is conditioned on
    prefix: str | None = None  # text the first window's transcript is made to begin with
    hotwords: str | None = None  # hint words put in every window's prompt (faster-whisper), unless a prefix is given
    recipe: Recipe = field(default_factory=Recipe)
    prepend_punctuations: str = PREPEND_PUNCTUATIONS
    append_punctuations: str = APPEND_PUNCTUATIONS
    multilingual: bool = False  # detect the language of every window (else the first window's is kept)
    suppression: Suppression | None = None  # what windows may not produce; None: the model's generation config
    # faster-whisper's (CTranslate2's) repetition rules over what each window generates (core/logits.py LogitRules)
    repetition_penalty: float = 1.0  # a repeated token's logit divided (positive) or multiplied (negative) by it
    no_repeat_ngram_size: int = 0  # a token that would repeat an n-gram of this size is never chosen; 0: off
    max_new_tokens: int | None = None  # tokens a window may generate; None: as many as the model's context holds
    # seconds: with words, a hallucinated segment standing in silence is dropped and skipped (hallucination.py)
    hallucination_silence_threshold: float | None = None
    # seconds of audio per window (faster-whisper's chunk_length): windows, seeking and VAD windows are this long,
    # each still zero-padded to the encoder's 30 s; None: the model's (30 s)
    chunk_length: int | None = None
    diarize: SpeakerOptions | None = None  # who spoke when: each word and segment given a speaker (speakers/)
    # faster-whisper's log-mel: always of the whole audio (with its 160 trailing zero samples), each window cut from
    # it and zero-padded as features; else openai's (audio up to a window padded with 30 s of zero samples)
    whole_features: bool = False
    # chunked windows (each decoded once) as faster-whisper's batched pipeline treats them: a last segment without
    # its closing timestamp dropped (with no pair of timestamps, one segment from the window's start), words aligned
    # over the window's whole seconds of frames; else ours: that segment ends where the window ends, words aligned
    # over its audio
    faster_whisper_windows: bool = False

    def __post_init__(self):
        if self.long_form not in LONG_FORM_MODES:
            raise OptionError("long_form", f"unknown long-form mode '{self.long_form}' ({{long_form}}): choose one "
                                           f"of {', '.join(LONG_FORM_MODES)}")
        if self.recipe.beam_size is not None and self.sampling.do_sample:
            raise OptionError("beam_size", "beam search ({beam_size}) decodes at temperature 0: it cannot be combined "
                                           "with {do_sample}")
        if self.vad_batch_size < 1:
            raise OptionError("vad_batch_size", f"{{vad_batch_size}} must be at least 1, not {self.vad_batch_size}")
        check_repetition(self.repetition_penalty, self.no_repeat_ngram_size)
        if self.max_new_tokens is not None and self.max_new_tokens < 1:
            raise OptionError("max_new_tokens", f"{{max_new_tokens}} must be at least 1, not {self.max_new_tokens}")
        threshold = self.hallucination_silence_threshold
        if threshold is not None and not threshold >= 0:
            raise OptionError("hallucination_silence_threshold",
                              f"{{hallucination_silence_threshold}} must be a number of seconds >= 0, not {threshold}")
        if threshold is not None and (self.vad_filter or self.long_form != "sequential"):
            raise OptionError("hallucination_silence_threshold",
                              "{hallucination_silence_threshold} applies to sequential decoding only: not with "
                              "{vad_filter} or {long_form=chunked}")
        if threshold is not None and not self.word_timestamps:
            raise OptionError("hallucination_silence_threshold",
                              "{hallucination_silence_threshold} needs word timestamps: set {word_timestamps} (openai-"
                              "whisper and faster-whisper apply it only then)")
        check_chunk_length(self.chunk_length)
        if not isinstance(self.diarize, (SpeakerOptions, type(None))):  # True or a count given directly
            object.__setattr__(self, "diarize", speaker_options(self.diarize))

    def with_overrides(self, **overrides) -> TranscribeOptions:
        """A copy with the given options (recipe fields may be given by name; None switches a threshold off)."""
        recipe_names = {item.name for item in fields(Recipe)}
        recipe = {key: overrides.pop(key) for key in list(overrides) if key in recipe_names}
        if "vad_options" in overrides and isinstance(overrides["vad_options"], dict):
            overrides["vad_options"] = vad_options(overrides["vad_options"])
        unknown = set(overrides) - {item.name for item in fields(TranscribeOptions)}
        if unknown:
            raise SpecdecError(f"unknown transcription option(s): {', '.join(sorted(unknown))}")
        options = replace(self, **overrides)
        return replace(options, recipe=replace(options.recipe, **recipe)) if recipe else options


class LanguageReplaced(UserWarning):
    """A language other than English was asked of an English-only model, which decodes English (as faster-whisper
    does it): the result says "en"."""


def for_model(options: TranscribeOptions, multilingual: bool, warn: bool = True) -> TranscribeOptions:
    """The options as a model can take them. An English-only model decodes English: another language is replaced
    by "en", with a LanguageReplaced warning (faster-whisper's way), so the result reports the language decoded; it
    cannot translate (OptionError). `warn=False`: a check before the call, which warns itself."""
    if multilingual:
        return options
    if options.task == "translate":
        raise OptionError("task", "this model is English-only: it cannot translate ({task=translate}); use a "
                                  "multilingual model")
    if warn and options.language is not None and options.language.strip().lower() not in ("en", "english"):
        warnings.warn(f"this model is English-only: language '{options.language}' is replaced by 'en'",
                      LanguageReplaced, stacklevel=3)
    return replace(options, language="en") if options.language is not None else options


# what a batch cannot do: each needs an audio's windows decoded one after another, or the whole audio at once
BATCH_REFUSED = ("vad_filter", "condition_on_previous_text", "diarize", "hallucination_silence_threshold")


def check_batch(options: TranscribeOptions) -> None:
    """OptionError for an option a batch (transcribe_batch, which decodes several audios' windows together as rows)
    cannot apply; every other option it honours as transcribe does."""
    for name in BATCH_REFUSED:
        if getattr(options, name) not in (None, False):
            raise OptionError(name, f"{{{name}}} cannot be applied to a batch (its audios' windows are decoded "
                                    "together): transcribe one audio at a time for it")


def check_repetition(repetition_penalty: float, no_repeat_ngram_size: int) -> None:
    """A one-line error for repetition options out of range (CTranslate2's: a penalty > 0, an n-gram size >= 0)."""
    if not isinstance(repetition_penalty, numbers.Real) or not repetition_penalty > 0:
        raise OptionError("repetition_penalty", f"{{repetition_penalty}} must be a number > 0, not "
                                                f"{repetition_penalty!r}")
    if isinstance(no_repeat_ngram_size, bool) or not isinstance(no_repeat_ngram_size, numbers.Integral) \
            or no_repeat_ngram_size < 0:
        raise OptionError("no_repeat_ngram_size", f"{{no_repeat_ngram_size}} must be an integer >= 0, not "
                                                  f"{no_repeat_ngram_size!r}")


def check_chunk_length(chunk_length) -> None:
    """A one-line error for a window length Whisper cannot take: whole seconds from 1 to 30 (its 1500 positions)."""
    if chunk_length is None:
        return
    if isinstance(chunk_length, bool) or not isinstance(chunk_length, numbers.Integral) \
            or not 0 < chunk_length <= MAX_CHUNK_SECONDS:
        raise OptionError("chunk_length", f"{{chunk_length}} must be a whole number of seconds from 1 to "
                                          f"{MAX_CHUNK_SECONDS}, not {chunk_length!r} (a longer window exceeds "
                                          "Whisper's 1500 encoder positions)")


def vad_options(values: dict | VadOptions | None) -> VadOptions:
    if values is None or isinstance(values, VadOptions):
        return values or VadOptions()
    known = {item.name for item in fields(VadOptions)}
    unknown = set(values) - known
    if unknown:
        raise SpecdecError(f"unknown VAD option(s) {', '.join(sorted(unknown))}: use {', '.join(sorted(known))}")
    return VadOptions(**values)


def temperature_ladder(temperature, fallback: bool | None) -> tuple[float, ...] | None:
    """The fallback ladder from openai's arguments: `temperature` a list (the ladder itself) or one number (the
    ladder's first temperature: 0 greedy, above 0 sampled at it; with `fallback=True` climbing from it as openai's
    does, by 0.2 to 1.0), `fallback=True` alone openai's default ladder (0.0, 0.2, ... 1.0); None when neither is
    given (a call keeps the ladder it has; a single 0 too)."""
    if isinstance(temperature, (list, tuple)):
        ladder = tuple(temperature)
        check_temperatures(ladder, "temperature")
        return tuple(float(value) for value in ladder)
    if temperature is not None:
        check_temperatures((temperature,), "temperature")
        if temperature > 0:
            return openai_ladder(float(temperature)) if fallback else (float(temperature),)
    if fallback:
        return DEFAULT_TEMPERATURES
    if fallback is False:
        return (0.0,)
    return None


@dataclass(frozen=True)
class PromptTokens:
    initial: list[int]  # conditions the first window (and later ones while conditioning goes on)
    prefix: list[int]  # the first window's forced start
    hotwords: list[int]  # in every window's prompt, before the previous text


def prompt_tokens(tokenizer, options: TranscribeOptions, limit: int) -> PromptTokens:
    """Token ids of the option texts. A prompt over `limit` tokens (Whisper's: half its context less one) keeps
    its last `limit` tokens, as openai does, with a PromptTruncated warning; a prefix or hotwords over it keep
    their first ones, as faster-whisper does."""
    def encode(text: str | tuple[int, ...] | None) -> list[int]:
        if isinstance(text, (tuple, list)):
            return [int(token) for token in text]  # token ids, as faster-whisper's initial_prompt may be
        return tokenizer.encode(" " + text.strip(), add_special_tokens=False) if text and text.strip() else []

    initial, prefix = encode(options.initial_prompt), encode(options.prefix)
    hotwords = encode(options.hotwords) if not prefix else []
    if len(initial) > limit:
        warnings.warn(f"initial prompt of {len(initial)} tokens is over Whisper's limit of {limit}: only its last "
                      f"{limit} tokens are used (as openai-whisper does)", PromptTruncated, stacklevel=3)
        initial = initial[-limit:]
    for name, tokens in (("prefix", prefix), ("hotwords", hotwords)):
        if len(tokens) > limit:
            warnings.warn(f"{name} of {len(tokens)} tokens is over Whisper's limit of {limit}: only its first "
                          f"{limit} tokens are used", PromptTruncated, stacklevel=3)
    return PromptTokens(initial, prefix[:limit], hotwords[:limit])


def window_context(hotwords: list[int], previous: list[int] | None, limit: int) -> list[int] | None:
    """A window's <|startofprev|> text: the hotwords, then as much of the previous text as fits the limit."""
    previous = previous or []
    room = max(0, limit - len(hotwords))
    context = hotwords + (previous[-room:] if room else [])
    return context or None
