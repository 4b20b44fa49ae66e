"""What every dataset loader yields: utterances with an id, their audio and an optional reference."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import EvalError


class DatasetError(EvalError):
    """The dataset could not be found, opened or read; the message is one line for the user."""


@dataclass(frozen=True)
class Utterance:
    id: str
    audio: str | bytes  # a file path, or an encoded file's bytes (datasets stores FLAC bytes in its parquet)
    reference: str | None  # None: counts for parity and speed, not for WER

    def as_record(self) -> dict:
        """A flat dict with fixed column types, as Ray Data and JSON carry it."""
        is_path = isinstance(self.audio, str)
        return {"id": self.id, "reference": self.reference, "audio_path": self.audio if is_path else None,
                "audio_bytes": None if is_path else bytes(self.audio)}

    @classmethod
    def from_record(cls, record: dict) -> Utterance:
        audio = record["audio_path"] if record.get("audio_path") else record["audio_bytes"]
        return cls(str(record["id"]), audio, record.get("reference"))


def existing_audio(folder: Path, relative: str, where: str) -> str:
    """The path of an audio file a transcript or metadata line names; a DatasetError when it is missing."""
    path = folder / relative
    if not path.is_file():
        raise DatasetError(f"{where} names audio '{relative}', but {path} does not exist")
    return str(path)
