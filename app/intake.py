"""Audio a client sent: accepted only from Gradio's upload area, within the size and duration limits."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from asr_specdec.errors import AudioError, SpecdecError
from asr_specdec.whisper.io.audio import duration_seconds, load_audio


class LimitError(SpecdecError):
    """The upload is larger or longer than this server accepts."""


def upload_folder() -> Path:
    from gradio.utils import get_upload_folder

    return Path(get_upload_folder()).resolve()


def uploaded_path(value: str | None, folder: Path | None = None) -> Path:
    """The uploaded file `value` names, refused unless it lies inside the upload folder."""
    if not value:
        raise AudioError("no audio: upload a file or record from the microphone first")
    folder = (folder or upload_folder()).resolve()
    path = Path(value).resolve()
    if not path.is_relative_to(folder):
        raise AudioError(f"{Path(value).name}: not an uploaded file")
    return path


def read_audio(path: Path, max_bytes: int, max_audio_seconds: float) -> np.ndarray:
    """16 kHz mono samples of an uploaded file, after checking its size and then its duration."""
    if path.is_file() and path.stat().st_size > max_bytes:
        raise LimitError(f"{path.name} is {_megabytes(path.stat().st_size)}; this server accepts uploads up to "
                         f"{_megabytes(max_bytes)}")
    try:
        samples = load_audio(path)
    except AudioError as error:
        # the message names the server's temporary path; the user knows the file by its name
        raise AudioError(str(error).replace(str(path), path.name)) from None
    seconds = duration_seconds(samples)
    if seconds > max_audio_seconds:
        raise LimitError(f"{path.name} lasts {seconds:.1f} s; this server transcribes at most {max_audio_seconds:g} s")
    return samples


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
