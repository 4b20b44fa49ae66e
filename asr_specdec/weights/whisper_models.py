"""One resolver from a model spec to a loaded Whisper: offline pack name, CTranslate2 dir, transformers dir
or model-hub id, tried in that order."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import ModelError
from .cache import known_sha256
from .ct2 import quiet_progress_bars
from .hub import hub_reachable, load_failure, looks_like_path
from .packs import PACKS, cached_conversion, ensure_pack, pack_names

LARGE_MAIN, LARGE_ASSISTANT = "openai/whisper-large-v3", "distil-whisper/distil-large-v3"
OFFLINE_MAIN = "base"


@dataclass(frozen=True)
class LoadedWhisper:
    model: torch.nn.Module  # WhisperForConditionalGeneration, or WhisperForCausalLM for a decoder-only assistant
    processor: object | None  # WhisperProcessor; None only for an assistant directory that ships none
    name: str  # the spec it was loaded from
    source: str  # "pack" | "ct2" | "transformers" | "hub"
    path: Path | None  # the local transformers directory; None for a hub id
    sha256: str | None  # of the CTranslate2 model.bin it was converted from, when there was one


@dataclass(frozen=True)
class _Resolved:
    location: Path | str
    source: str
    sha256: str | None = None


def _resolve(spec: str) -> _Resolved:
    if spec in PACKS:
        return _Resolved(ensure_pack(spec), "pack", PACKS[spec].sha256)
    path = Path(spec).expanduser()
    if path.is_dir():
        if (path / "model.bin").is_file():
            sha256 = known_sha256(path / "model.bin")
            entry = cached_conversion(path, f"ct2/{path.resolve().name}-{sha256[:12]}", sha256, in_place=True)
            return _Resolved(entry, "ct2", sha256)
        if (path / "config.json").is_file():
            return _Resolved(path, "transformers")
        raise ModelError(f"'{spec}' holds neither a CTranslate2 model.bin nor a transformers config.json")
    if path.exists():
        raise ModelError(f"'{spec}' is a file; a model is a directory, a pack name ({', '.join(pack_names())}) "
                         "or a model-hub id")
    if looks_like_path(spec):
        raise ModelError(f"no such model directory: '{spec}'")
    return _Resolved(spec, "hub")


def resolve_model_dir(spec: str) -> Path | str:
    """A local transformers directory for `spec` (converting and caching CTranslate2 checkpoints), or the
    model-hub id itself."""
    return _resolve(spec).location


def default_models() -> tuple[str, str | None, str]:
    """(main model, assistant model or None, why) for this machine."""
    if torch.cuda.is_available() and hub_reachable():
        return LARGE_MAIN, LARGE_ASSISTANT, "GPU and model hub available"
    return OFFLINE_MAIN, None, f"no GPU or no model hub: offline pack '{OFFLINE_MAIN}'"


def _architectures(resolved: _Resolved, local_only: bool) -> list[str]:
    if isinstance(resolved.location, Path):
        return json.loads((resolved.location / "config.json").read_text()).get("architectures") or []
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(resolved.location, local_files_only=local_only).architectures or []


def _from_pretrained(model_class, location: Path | str, dtype, local_only: bool):
    """model_class.from_pretrained(location), given every weight where a converted folder leaves some in its
    CTranslate2 model.bin (ct2.py, LINEARS_FILE): from the file alone those would be missing, and transformers would
    initialise them at random."""
    from safetensors.torch import load_file
    from transformers import GenerationConfig

    from .ct2 import linears_in_place

    in_place = linears_in_place(location) if isinstance(location, Path) else {}
    if not in_place:
        return model_class.from_pretrained(location, dtype=dtype, local_files_only=local_only)
    model = model_class.from_pretrained(None, config=model_class.config_class.from_pretrained(location), dtype=dtype,
                                        state_dict={**load_file(location / "model.safetensors"), **in_place})
    model.generation_config = GenerationConfig.from_pretrained(location)
    return model


def _load(spec: str, device, dtype, decoder_only: bool | None, need_processor: bool) -> LoadedWhisper:
    from transformers import WhisperForCausalLM, WhisperForConditionalGeneration, WhisperProcessor

    resolved = _resolve(spec)
    hub = resolved.source == "hub"
    local_only = hub and not hub_reachable()
    try:
        if decoder_only is None:
            decoder_only = "WhisperForCausalLM" in _architectures(resolved, local_only)
        model_class = WhisperForCausalLM if decoder_only else WhisperForConditionalGeneration
        with quiet_progress_bars():
            model = _from_pretrained(model_class, resolved.location, dtype, local_only)
        try:
            processor = WhisperProcessor.from_pretrained(resolved.location, local_files_only=local_only)
        except (OSError, ValueError):
            if need_processor:
                raise
            processor = None
    except (OSError, ValueError) as error:
        raise load_failure(f"'{spec}'", None if hub else resolved.location, local_only,
                           f"an offline pack ({', '.join(pack_names())})", error) from None
    return LoadedWhisper(model.to(device).eval(), processor, spec, resolved.source,
                         None if hub else Path(resolved.location), resolved.sha256)


def load_whisper(spec: str, device="cpu", dtype=torch.float32) -> LoadedWhisper:
    """A WhisperForConditionalGeneration (eval mode) and its processor, from any spec `_resolve` accepts."""
    return _load(spec, device, dtype, decoder_only=False, need_processor=True)


def load_assistant(spec: str, device="cpu", dtype=torch.float32, decoder_only: bool | None = None) -> LoadedWhisper:
    """A drafting model: decoder-only (WhisperForCausalLM, sharing the main model's encoder) when asked or
    when its config's architectures say so, else a full WhisperForConditionalGeneration."""
    return _load(spec, device, dtype, decoder_only=decoder_only, need_processor=False)
