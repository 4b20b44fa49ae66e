"""Whisper's special tokens and decoding rules, read from a model's generation config."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import SpecdecError
from .logits import LogitRules


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
        )

    @property
    def multilingual(self) -> bool:
        return bool(self.language_ids)

    def language_token(self, language: str) -> int:
        """Accepts 'en', 'english' or '<|en|>'."""
        from transformers.models.whisper.tokenization_whisper import LANGUAGES, TO_LANGUAGE_CODE

        code = language.strip().lower()
        code = TO_LANGUAGE_CODE.get(code, code)
        key = code if code.startswith("<|") else f"<|{code}|>"
        if key not in self.language_ids:
            known = ", ".join(sorted(LANGUAGES)[:12])
            raise SpecdecError(f"unknown language '{language}' for this model (use a code such as {known}, ...)")
        return self.language_ids[key]

    def prompt(self, language_id: int | None, task: str) -> list[int]:
        """The decoder prompt: start, [language, task,] no-timestamps."""
        if task not in ("transcribe", "translate"):
            raise SpecdecError(f"unknown task '{task}': use transcribe or translate")
        tokens = [self.start_of_transcript]
        if self.multilingual:
            tokens += [language_id, self.task_ids[task]]
        elif task == "translate":
            raise SpecdecError("this model is English-only and cannot translate: use a multilingual model")
        return tokens + [self.no_timestamps]

    def rules(self, prompt_length: int) -> LogitRules:
        return LogitRules(self.suppress_tokens, self.begin_suppress_tokens, begin_index=prompt_length)
