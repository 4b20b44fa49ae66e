"""What the page must know about a model before offering choices: its vocabulary (which assistants can draft
for it in assistant mode) and the languages it knows (none listed: English only)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ModelProfile:
    vocab_size: int
    languages: tuple[str, ...]  # language codes ("en", "de", ...); empty for an English-only model

    @property
    def multilingual(self) -> bool:
        return bool(self.languages)


def profile_from_directory(directory: Path) -> ModelProfile:
    """Read from a transformers directory's config files, without loading the weights."""
    config = json.loads((directory / "config.json").read_text())
    generation_file = directory / "generation_config.json"
    generation = json.loads(generation_file.read_text()) if generation_file.is_file() else {}
    return ModelProfile(config["vocab_size"], _codes(generation.get("lang_to_id")))


def profile_from_model(model) -> ModelProfile:
    return ModelProfile(model.config.vocab_size, _codes(getattr(model.generation_config, "lang_to_id", None)))


def _codes(lang_to_id: dict | None) -> tuple[str, ...]:
    return tuple(token.strip("<|>") for token in (lang_to_id or {}))
