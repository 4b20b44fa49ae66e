"""Languages by name and the tasks a model offers: the pickers' choices for a main model, and the detected
language as the page shows it."""

from __future__ import annotations

AUTO = "auto"
TASKS = [("transcribe", "transcribe"), ("translate to English", "translate")]


def language_name(code: str | None) -> str:
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    if not code:
        return "unknown"
    return LANGUAGES.get(code, code).title()


def language_choices(codes: tuple[str, ...]) -> list[tuple[str, str]]:
    """("German (de)", "de") for each language a multilingual model knows, by name, after "Detect"; an
    English-only model (no codes) gets English alone."""
    if not codes:
        return [("English", "en")]
    named = sorted((f"{language_name(code)} ({code})", code) for code in codes)
    return [("Detect automatically", AUTO), *named]


def language_info(main: str, codes: tuple[str, ...]) -> str:
    if not codes:
        return f"{main} knows only English"
    return f"{main} knows {len(codes)} languages; Detect finds the spoken one from the first 30 s"


def task_choices(multilingual: bool) -> list[tuple[str, str]]:
    """Translation needs a multilingual model."""
    return TASKS if multilingual else TASKS[:1]
