"""The `datasets` audiofolder format: a folder of audio files with metadata.csv (or metadata.jsonl) whose
`file_name` column names each file, relative to the metadata file, and a transcript column; optionally
one such folder per split (train/, test/, ...).

Read here rather than through `datasets.load_dataset("audiofolder")`, which in datasets 5 needs torchcodec
to pass audio through even undecoded."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from .base import DatasetError, Utterance, existing_audio

METADATA_FILES = ("metadata.csv", "metadata.jsonl")
TRANSCRIPT_COLUMNS = ("transcription", "text", "sentence", "reference", "normalized_text")


def metadata_file(folder: Path) -> Path | None:
    return next((folder / name for name in METADATA_FILES if (folder / name).is_file()), None)


def find_metadata(root: Path, split: str | None) -> Path | None:
    """The metadata file of `split`'s subfolder if there is one, else of `root` itself."""
    if split and (root / split).is_dir() and metadata_file(root / split):
        return metadata_file(root / split)
    return metadata_file(root)


def _entries(metadata: Path) -> list[dict]:
    text = metadata.read_text(encoding="utf-8")
    if metadata.suffix == ".csv":
        return list(csv.DictReader(text.splitlines()))
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise DatasetError(f"{metadata}: not valid JSON lines ({error.msg} at line {error.lineno})") from None


def read_audiofolder(root: Path, split: str | None = None) -> list[Utterance]:
    metadata = find_metadata(root, split)
    if metadata is None:
        raise DatasetError(f"{root}: no {' or '.join(METADATA_FILES)}")
    entries = _entries(metadata)
    if not entries:
        raise DatasetError(f"{metadata}: lists no audio")
    if "file_name" not in entries[0]:
        raise DatasetError(f"{metadata}: needs a file_name column")
    column = next((name for name in TRANSCRIPT_COLUMNS if name in entries[0]), None)
    utterances = []
    for number, entry in enumerate(entries, start=2 if metadata.suffix == ".csv" else 1):
        audio = existing_audio(metadata.parent, str(entry["file_name"]), f"{metadata}:{number}")
        reference = entry.get(column) if column else None
        utterances.append(Utterance(str(entry["file_name"]), audio, reference or None))
    return utterances
