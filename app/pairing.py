"""Which assistant can draft for which main model. Assistant mode feeds the assistant's tokens to the main
model as they are, so it needs the main model's vocabulary; universal mode moves drafts across as text, so
any pair works."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .settings import DecodeOptions

Vocabulary = Callable[[str], int]  # model spec -> vocabulary size


def assistant_choices(main: str, mode: str, models: tuple[str, ...], vocabulary: Vocabulary) -> list[str]:
    """The assistants worth offering: same vocabulary (the main model itself included) for assistant mode,
    every other model for universal mode; none for the other modes."""
    if mode == "assistant":
        return [model for model in models if vocabulary(model) == vocabulary(main)]
    if mode == "universal":
        return [model for model in models if model != main] or [main]
    return []


def paired(options: DecodeOptions, models: tuple[str, ...], vocabulary: Vocabulary,
           preferred: str | None = None) -> tuple[DecodeOptions, str | None]:
    """(options that will work, a note for the user when they were changed).

    A missing assistant becomes the preferred one (or the first that fits); an assistant-mode pair with
    different vocabularies is decoded in universal mode instead of failing."""
    if options.mode not in ("assistant", "universal"):
        return options, None
    if not options.assistant:
        fitting = assistant_choices(options.main, options.mode, models, vocabulary)
        return replace(options, assistant=preferred if preferred in fitting else fitting[0]), None
    if options.mode == "assistant" and vocabulary(options.assistant) != vocabulary(options.main):
        note = (f"{options.assistant} has another tokenizer than {options.main}, so it drafted in universal mode "
                "(its drafts are passed on as text); the assistant drafter needs the same tokenizer")
        return replace(options, mode="universal"), note
    return options, None


def assistant_info(main: str, mode: str, fitting: list[str]) -> str:
    """One line under the assistant picker: why these assistants are the ones offered."""
    if mode == "universal":
        return "any tokenizer: its drafts are passed to the main model as text"
    if fitting == [main]:
        return f"needs {main}'s tokenizer, and no other model here has it: {main} drafts for itself"
    return f"needs {main}'s tokenizer: {', '.join(fitting)}"
