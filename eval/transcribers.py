"""One SpeculativeWhisper per variant, all sharing one loaded main model (and one assistant)."""

from __future__ import annotations

import json
from dataclasses import replace

from asr_specdec.core.logits import Sampling
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.arguments import recipe_arguments
from asr_specdec.whisper.model_options import ModelOptions
from asr_specdec.whisper.options import TranscribeOptions

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
    # the settings mapped into the two options objects once; each variant is a replace of them
    model = ModelOptions(main=loaded[settings.main], early_exit_layer=settings.early_exit_layer, device=device,
                         compute_type=str(dtype).removeprefix("torch."))
    options = TranscribeOptions(language=settings.language,
                                sampling=Sampling(settings.do_sample, settings.sampling_temperature),
                                seed=settings.seed).with_overrides(**recipe_arguments(json.loads(settings.recipe
                                                                                                 or "{}")))
    transcribers = {}
    for variant in variants:
        spec = drafter_model(settings, variant.mode)
        transcribers[variant.label] = SpeculativeWhisper.from_options(
            replace(model, mode=variant.mode, assistant=loaded[spec] if spec else None,
                    num_draft_tokens=variant.draft_tokens or model.num_draft_tokens), options)
    return transcribers
