"""A LibriSpeech directory in the original OpenSLR layout: SPEAKER/CHAPTER/SPEAKER-CHAPTER.trans.txt, whose
lines are `UTTERANCE-ID TRANSCRIPT`, beside UTTERANCE-ID.flac."""

from __future__ import annotations

from pathlib import Path

from .base import DatasetError, Utterance, existing_audio

# the tarballs unpack to LibriSpeech/test-clean, LibriSpeech/dev-other, ...; the hub calls "dev" "validation"
OPENSLR_SPLIT_NAMES = {"validation": "dev"}


def has_transcripts(folder: Path) -> bool:
    return next(folder.rglob("*.trans.txt"), None) is not None


def split_folder(root: Path, config: str | None, split: str | None) -> Path:
    """`root` itself, or its subset folder (e.g. test-clean) when `root` is the unpacked LibriSpeech/ folder."""
    if split:
        name = OPENSLR_SPLIT_NAMES.get(split, split)
        for candidate in (f"{name}-{config or 'clean'}", name):
            if (root / candidate).is_dir() and has_transcripts(root / candidate):
                return root / candidate
    return root


def read_openslr(root: Path, config: str | None = None, split: str | None = None) -> list[Utterance]:
    folder = split_folder(root, config, split)
    utterances = []
    for transcript in sorted(folder.rglob("*.trans.txt")):
        lines = transcript.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{transcript}:{number}"
            utterance_id, _, text = line.strip().partition(" ")
            if not text.strip():
                raise DatasetError(f"{where}: utterance '{utterance_id}' has no transcript")
            audio = existing_audio(transcript.parent, f"{utterance_id}.flac", where)
            utterances.append(Utterance(utterance_id, audio, text.strip()))
    if not utterances:
        raise DatasetError(f"{folder}: its *.trans.txt files list no utterances")
    return utterances
