"""Prompt lookup (n-gram matching over the window's own tokens): core's drafter, which needs no model."""

from __future__ import annotations

from ...core.prompt_lookup import PromptLookupDrafter

MODE = "prompt-lookup"


def build(context) -> PromptLookupDrafter:
    return PromptLookupDrafter()
