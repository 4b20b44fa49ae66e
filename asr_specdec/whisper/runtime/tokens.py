"""Whisper's special tokens and decoding rules, read from a model's generation config."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.logits import LogitRules
from ...errors import SpecdecError
from .languages import CODES, NAMES
from .timestamps import TimestampRules

DEFAULT_MAX_INITIAL_TIMESTAMP_INDEX = 50  # openai's max_initial_timestamp of 1.0 s
TIMESTAMP_SECONDS = 0.02  # what one timestamp token step is worth


@dataclass(frozen=True)
class Suppression:
    """What a window may not produce, where it differs from the model's generation config (faster-whisper's
    `suppress_tokens`, `suppress_blank` and `max_initial_timestamp`)."""

    tokens: tuple[int, ...] | None = None  # never produced; None: the generation config's list
    blank: bool = True  # no blank (a space or end-of-text) as the first token
    max_initial_timestamp: float | None = 1.0  # seconds: the first timestamp is no later; None: no limit

    def __post_init__(self):
        if self.max_initial_timestamp is not None and self.max_initial_timestamp < 0:
            raise SpecdecError(f"max_initial_timestamp must be 0 or more seconds, not {self.max_initial_timestamp}")


@dataclass(frozen=True)
class WhisperTokens:
    start_of_transcript: int
    end_of_text: int
    no_timestamps: int
    language_ids: dict  # "<|en|>" -> id
    task_ids: dict  # "transcribe" -> id
    suppress_tokens: tuple[int, ...]
    begin_suppress_tokens: tuple[int, ...]
    max_positions: int
    vocab_size: int = 0
    start_of_prev: int | None = None
    max_initial_timestamp_index: int | None = DEFAULT_MAX_INITIAL_TIMESTAMP_INDEX

    @classmethod
    def from_model(cls, model) -> WhisperTokens:
        config = model.generation_config
        eos = config.eos_token_id
        eos = eos[0] if isinstance(eos, (list, tuple)) else eos
        max_positions = model.config.max_target_positions
        return cls(
            start_of_transcript=config.decoder_start_token_id,
            end_of_text=eos,
            no_timestamps=config.no_timestamps_token_id,
            language_ids=dict(getattr(config, "lang_to_id", None) or {}),
            task_ids=dict(getattr(config, "task_to_id", None) or {}),
            suppress_tokens=tuple(config.suppress_tokens or ()),
            begin_suppress_tokens=tuple(config.begin_suppress_tokens or ()),
            max_positions=min(max_positions, getattr(config, "max_length", None) or max_positions),
            vocab_size=model.config.vocab_size,
            start_of_prev=getattr(config, "prev_sot_token_id", None),
            max_initial_timestamp_index=getattr(config, "max_initial_timestamp_index",
                                                DEFAULT_MAX_INITIAL_TIMESTAMP_INDEX),
        )

    @property
    def multilingual(self) -> bool:
        return bool(self.language_ids)

    def language_token(self, language: str) -> int:
        """Accepts 'en', 'english' or '<|en|>'."""
        code = language.strip().lower()
        code = CODES.get(code, code)
        key = code if code.startswith("<|") else f"<|{code}|>"
        if key not in self.language_ids:
            known = ", ".join(sorted(NAMES)[:12])
            raise SpecdecError(f"unknown language '{language}' for this model (use a code such as {known}, ...)")
        return self.language_ids[key]

    @property
    def timestamp_begin(self) -> int:
        """The id of <|0.00|>: Whisper numbers its timestamps right after <|notimestamps|>."""
        return self.no_timestamps + 1

    @property
    def no_speech(self) -> int:
        """<|nospeech|> (<|nocaptions|> in older vocabularies), which Whisper places right before <|notimestamps|>."""
        return self.no_timestamps - 1

    @property
    def prompt_limit(self) -> int:
        """How many previous-text tokens a prompt may hold (openai and transformers keep the last ones)."""
        return self.max_positions // 2 - 1

    def forced_prefix(self, prefix: list[int] | tuple[int, ...] | None, timestamps: bool) -> list[int]:
        """The tokens a window's transcript is made to begin with: the prefix text, after <|0.00|> when decoding
        with timestamps (faster-whisper's layout), so that the model continues the prefix's segment."""
        if not prefix:
            return []
        return [self.timestamp_begin, *prefix] if timestamps else list(prefix)

    @property
    def timestamp_count(self) -> int:
        return max(0, self.vocab_size - self.timestamp_begin)

    def prompt(self, language_id: int | None, task: str, timestamps: bool = False,
               previous: list[int] | None = None) -> list[int]:
        """The decoder prompt: [<|startofprev|>, previous text,] start, [language, task,] and no-timestamps
        unless decoding with timestamps. Only the last max_positions // 2 - 1 previous tokens are kept."""
        if task not in ("transcribe", "translate"):
            raise SpecdecError(f"unknown task '{task}': use transcribe or translate")
        tokens = [self.start_of_transcript]
        if self.multilingual:
            tokens += [language_id, self.task_ids[task]]
        elif task == "translate":
            raise SpecdecError("this model is English-only and cannot translate: use a multilingual model")
        if timestamps and not self.timestamp_count:
            raise SpecdecError("this model's vocabulary has no timestamp tokens: decode without timestamps")
        if previous:
            if self.start_of_prev is None:
                raise SpecdecError("this model has no <|startofprev|> token: decode without previous-text conditioning")
            tokens = [self.start_of_prev, *previous[-(self.max_positions // 2 - 1):], *tokens]
        return tokens if timestamps else tokens + [self.no_timestamps]

    def rules(self, prompt_length: int, timestamps: bool = False, suppression: Suppression | None = None,
              repetition_penalty: float = 1.0, no_repeat_ngram_size: int = 0,
              max_timestamp_index: int | None = None) -> LogitRules:
        """The logit rules of a row whose prompt is `prompt_length` long: the model's, or `suppression`'s, and the
        repetition rules (core/logits.py) over what the row generates; with timestamps, none after
        `max_timestamp_index` (a window shorter than 30 s; None: every timestamp token)."""
        suppress, begin_suppress = self.suppress_tokens, self.begin_suppress_tokens
        max_initial = self.max_initial_timestamp_index
        if suppression is not None:
            suppress = suppress if suppression.tokens is None else tuple(suppression.tokens)
            begin_suppress = begin_suppress if suppression.blank else ()
            max_initial = (None if suppression.max_initial_timestamp is None
                           else round(suppression.max_initial_timestamp / TIMESTAMP_SECONDS))
        repetition = {"repetition_penalty": repetition_penalty, "no_repeat_ngram_size": no_repeat_ngram_size}
        if not timestamps:
            return LogitRules(suppress, begin_suppress, begin_index=prompt_length, **repetition)
        return TimestampRules(suppress, begin_suppress, begin_index=prompt_length, **repetition,
                              timestamp_begin=self.timestamp_begin, no_timestamps=self.no_timestamps,
                              end_of_text=self.end_of_text, max_initial_timestamp_index=max_initial,
                              max_timestamp_index=max_timestamp_index)

    def special_ids(self) -> tuple[int, ...]:
        """The tokens faster-whisper always suppresses with a `suppress_tokens` list: the tasks, start of
        transcript, of previous text and of LM, and no-speech."""
        ids = [*self.task_ids.values(), self.start_of_transcript, self.no_speech]
        if self.start_of_prev is not None:
            ids += [self.start_of_prev, self.start_of_prev - 1]  # <|startoflm|> comes right before <|startofprev|>
        return tuple(sorted(set(ids)))
