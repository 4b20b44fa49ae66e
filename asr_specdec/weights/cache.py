"""The on-disk cache of converted models: where it is, and how an entry is built so that it is never seen
half-written (a staging folder, a completion marker holding the content's SHA-256, one atomic rename)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

MARKER = "asr_specdec-model.sha256"


def cache_root() -> Path:
    return Path(os.environ.get("ASR_SPECDEC_CACHE") or Path.home() / ".cache" / "asr_specdec").expanduser()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def package_dir(package: str) -> Path | None:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def is_complete(directory: Path, sha256: str) -> bool:
    marker = directory / MARKER
    return marker.is_file() and marker.read_text().strip() == sha256


def cached_build(target: Path, sha256: str, build: Callable[[Path, Path], None]) -> Path:
    """`target`, a cache entry for the content with `sha256` (the marker's text: the SHA-256, and the layout the
    entry is written in where it has several), made on first use: `build(scratch, model)` writes
    the directory `model`, with the folder `scratch` for anything else it needs (removed afterwards). The entry
    is marked complete and moved into place in one rename, so a crash or a concurrent process never leaves a
    half-made entry that looks complete."""
    if is_complete(target, sha256):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        build(staging, staging / "model")
        (staging / "model" / MARKER).write_text(sha256 + "\n")
        if target.exists() and not is_complete(target, sha256):  # a stale entry from an older layout
            shutil.rmtree(target)
        try:
            os.replace(staging / "model", target)
        except OSError:
            if not is_complete(target, sha256):  # another process did not just finish the same entry
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def concatenate(parts: list[Path], destination: Path) -> str:
    """Write `parts` one after the other into `destination`; returns its SHA-256."""
    digest = hashlib.sha256()
    with open(destination, "wb") as output:
        for part in parts:
            with open(part, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
                    output.write(chunk)
    return digest.hexdigest()
