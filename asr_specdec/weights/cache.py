"""The on-disk cache of converted models: where it is, and how an entry is built so that it is never seen
half-written (a staging folder, a completion marker holding the content's SHA-256, one atomic rename)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
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


def _identity(status: os.stat_result) -> list[int]:
    # the change time too: no one can set it, and every write or rename of the file moves it, so a file replaced by
    # another of the same size and modification time (a copy made with `cp -p`) still reads as changed
    return [status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]


def known_sha256(path: Path) -> str:
    """`path`'s SHA-256, remembered in the cache beside the file's identity (device, inode, size, modification and
    change times) and read again only when that changed: hashing a large-v3 model.bin takes seconds of every load."""
    path = path.resolve()
    memo = cache_root() / "sha256" / (hashlib.sha256(str(path).encode()).hexdigest()[:24] + ".json")
    identity = _identity(path.stat())
    try:
        remembered = json.loads(memo.read_text())
        if remembered["path"] == str(path) and remembered["identity"] == identity:
            return remembered["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    sha256 = sha256_file(path)
    if _identity(path.stat()) == identity:  # not changed while it was read
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            staging = memo.with_name(f".{memo.name}.{os.getpid()}")
            staging.write_text(json.dumps({"path": str(path), "identity": identity, "sha256": sha256}))
            os.replace(staging, memo)
        except OSError:
            pass  # a read-only cache: hashed again next time
    return sha256


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
