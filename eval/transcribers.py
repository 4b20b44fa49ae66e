"""One SpeculativeWhisper per variant, all sharing one loaded main model (and one assistant)."""

from __future__ import annotations

import json

from asr_specdec.whisper import SpeculativeWhisper

from .settings import EvalSettings, Variant, drafter_model


def torch_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


def build_transcribers(settings: EvalSettings, variants: list[Variant]) -> dict[str, SpeculativeWhisper]:
    import torch

    from asr_specdec.weights.whisper_models import load_assistant, load_whisper

    device = torch_device(settings.device)
    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    loaded = {settings.main: load_whisper(settings.main, device=device, dtype=dtype)}
    for variant in variants:
        spec = drafter_model(settings, variant.mode)
        if spec is not None and spec not in loaded:  # the main model drafting for itself is loaded once
            loaded[spec] = load_assistant(spec, device=device, dtype=dtype)
    transcribers = {}
    for variant in variants:
        spec = drafter_model(settings, variant.mode)
        transcribers[variant.label] = SpeculativeWhisper(
            loaded[settings.main], mode=variant.mode, assistant_model=loaded[spec] if spec else None,
            num_draft_tokens=variant.draft_tokens, assistant_early_exit=settings.early_exit_layer,
            do_sample=settings.do_sample, temperature=settings.temperature, seed=settings.seed,
            language=settings.language, device=device, dtype=dtype, **json.loads(settings.recipe or "{}"))
    return transcribers
