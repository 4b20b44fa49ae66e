"""A JSONL manifest: one object per line with `audio` (a path relative to the manifest) and `reference`
(text, or null for a clip that counts for parity and speed only), optionally `id`."""

from __future__ import annotations

import json
from pathlib import Path

from .base import DatasetError, Utterance, existing_audio


def read_manifest(path: Path) -> list[Utterance]:
    utterances, seen = [], set()
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as error:
            raise DatasetError(f"{where}: not valid JSON ({error.msg})") from None
        if not isinstance(entry, dict) or not isinstance(entry.get("audio"), str) or not entry["audio"]:
            raise DatasetError(f"{where}: each line needs an \"audio\" path")
        reference = entry.get("reference", entry.get("text"))
        if reference is not None and not isinstance(reference, str):
            raise DatasetError(f"{where}: \"reference\" must be text or null")
        utterance_id = str(entry.get("id") or entry["audio"])
        if utterance_id in seen:
            raise DatasetError(f"{where}: utterance id '{utterance_id}' appears twice")
        seen.add(utterance_id)
        audio = existing_audio(path.parent, entry["audio"], where)
        utterances.append(Utterance(utterance_id, audio, reference))
    if not utterances:
        raise DatasetError(f"{path}: the manifest lists no audio")
    return utterances
