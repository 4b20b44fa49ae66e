"""One loader for every dataset the eval reads: `load_utterances(spec, config, split)`.

`spec` is `librispeech` (the hub's openslr/librispeech_asr), any hub dataset id, a manifest .jsonl (or a
folder holding manifest.jsonl), an OpenSLR LibriSpeech directory, an audiofolder directory (metadata.csv)
or a local folder of parquet files laid out like a hub dataset."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from .audiofolder import find_metadata, read_audiofolder
from .base import DatasetError, Utterance
from .hub import LIBRISPEECH, is_local_hub_layout, stream_utterances
from .manifest import read_manifest
from .openslr import has_transcripts, read_openslr

ALIASES = {"librispeech": LIBRISPEECH, "librispeech_asr": LIBRISPEECH}
DEFAULT_CONFIGS = {LIBRISPEECH: "clean"}
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
KINDS = ("librispeech (the hub's openslr/librispeech_asr), a hub dataset id (owner/name), a manifest .jsonl, "
         "an OpenSLR LibriSpeech directory, an audiofolder directory (metadata.csv) or a folder of parquet files")

__all__ = ["DatasetError", "Utterance", "load_utterances", "describe_dataset"]


def _from_folder(folder: Path, config: str | None, split: str | None) -> Iterable[Utterance]:
    if not any(folder.iterdir()):
        raise DatasetError(f"{folder}: the directory is empty")
    if (folder / "manifest.jsonl").is_file():
        return read_manifest(folder / "manifest.jsonl")
    if find_metadata(folder, split):
        return read_audiofolder(folder, split)
    if has_transcripts(folder):
        return read_openslr(folder, config, split)
    if is_local_hub_layout(folder):
        return stream_utterances(str(folder), config, split or "test")
    raise DatasetError(f"{folder}: not a dataset: expected manifest.jsonl, metadata.csv, LibriSpeech *.trans.txt "
                       "files or parquet files")


def load_utterances(spec: str, config: str | None = None, split: str | None = None) -> Iterable[Utterance]:
    """The utterances of a dataset, in its order: a list for local sources (checked whole before any is
    used, so a transcript naming missing audio fails at once), a lazy stream for `datasets` sources."""
    name = ALIASES.get(spec, spec)
    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix != ".jsonl":
            raise DatasetError(f"{spec}: a dataset file must be a .jsonl manifest")
        return read_manifest(path)
    if path.is_dir():
        return _from_folder(path, config, split)
    if name == LIBRISPEECH or (_HUB_ID.fullmatch(name) and not spec.startswith((".", "~", "/"))):
        return stream_utterances(name, config or DEFAULT_CONFIGS.get(name), split or "test")
    if "/" in spec or spec.startswith((".", "~")) or spec.endswith(".jsonl"):
        raise DatasetError(f"{spec}: no such file or directory")
    raise DatasetError(f"unknown dataset '{spec}': use {KINDS}")


def describe_dataset(spec: str, config: str | None, split: str | None) -> dict:
    """What the report says about the data source."""
    name = ALIASES.get(spec, spec)
    path = Path(spec).expanduser()
    if path.exists():
        return {"dataset": str(path.resolve()), "config": config, "split": split}
    return {"dataset": name, "config": config or DEFAULT_CONFIGS.get(name), "split": split or "test"}
