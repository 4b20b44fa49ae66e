"""The one place a Whisper model spec becomes a loaded model: a name or directory (offline pack, CTranslate2,
transformers, hub id), a LoadedWhisper, a LoadedMain, a (model, processor) pair or a bare model; and the device it
runs on."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import ModelError


def load_model(spec, device, dtype):
    """(model, processor, name) from a spec string, a LoadedWhisper, or a (model, processor) pair. A local
    Whisper directory (offline packs included) loads without transformers' modeling code (lean_model.py)."""
    if isinstance(spec, str):
        from ..weights.whisper_models import load_whisper, resolve_model_dir

        lean = load_lean(resolve_model_dir(spec), device, dtype)
        if lean is not None:
            return (*lean, spec)

        loaded = load_whisper(spec, device=device, dtype=dtype)
        return loaded.model, loaded.processor, loaded.name
    if hasattr(spec, "model") and hasattr(spec, "processor"):
        return spec.model, spec.processor, getattr(spec, "name", type(spec.model).__name__)
    if isinstance(spec, tuple):
        model, processor = spec
        return model, processor, getattr(model.config, "_name_or_path", "") or type(model).__name__
    return spec, None, getattr(spec.config, "_name_or_path", "") or type(spec).__name__


@dataclass(frozen=True)
class LoadedMain:
    """A main model already loaded, as ModelOptions.main accepts it: transcribers built on it share the weights, and
    the window pipeline run on them (its packed kernels' weights) where they ask for the same compute type."""

    model: object
    processor: object
    name: str
    pipeline: object | None = None  # runtime/pipeline.py's WindowPipeline on these weights, if one was built


def given_model(spec):
    """The model object inside `spec` (LoadedWhisper, (model, processor) or a model), or None for a name."""
    if isinstance(spec, str):
        return None
    if hasattr(spec, "model") and hasattr(spec, "processor"):
        return spec.model
    return spec[0] if isinstance(spec, tuple) else spec


def resolve_device(spec, device: str | None) -> torch.device:
    """Where the main model runs: `device` when given (a model object must already be there), else where a given
    model object's weights are, else the CPU. Nothing downstream assumes a device: it reads this or the weights'."""
    model = given_model(spec)
    if model is None:
        return torch.device(device or "cpu")
    actual = next(model.parameters()).device
    if device is not None:
        asked = torch.device(device)
        if asked.type != actual.type or (asked.index is not None and asked.index != (actual.index or 0)):
            raise ModelError(f"the model given is on {actual} but device='{device}' was asked for: move it there "
                             "first (model.to(device)) or leave device out")
    return actual


def load_lean(location, device, dtype):
    """(model, processor) of a local directory the lean loader reads, else None."""
    from pathlib import Path

    from .runtime.lean_model import lean_loadable, load_lean_whisper
    from .runtime.lean_processor import load_lean_processor

    if not isinstance(location, Path) or not lean_loadable(location):
        return None
    processor = load_lean_processor(location)
    if processor is None:
        return None
    return load_lean_whisper(location, device=device, dtype=dtype), processor
