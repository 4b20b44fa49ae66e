"""The files a result downloads as (text, SRT, WebVTT, JSON) and the name they carry: the upload's, or the
time of a recording."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from pathlib import Path

from asr_specdec.whisper import TranscriptionResult
from asr_specdec.whisper.io.formats import to_srt, to_text, to_vtt
from asr_specdec.whisper.io.records import result_record

FORMATS = ("txt", "srt", "vtt", "json")


def download_stem(upload: str, recorded: bool) -> str:
    """The name downloads carry: the uploaded file's, or 'recording-<when it was recorded>' for a microphone
    recording (the browser names every recording the same)."""
    path = Path(upload)
    if not recorded:
        return path.stem
    when = datetime.fromtimestamp(path.stat().st_mtime) if path.exists() else datetime.now()
    return f"recording-{when:%Y-%m-%d-%H%M%S}"


def render(result: TranscriptionResult, extension: str, name: str) -> str:
    if extension == "json":
        return json.dumps(result_record(result, name), ensure_ascii=False, indent=2)
    return {"txt": to_text, "srt": to_srt, "vtt": to_vtt}[extension](result.segments)


def write_downloads(result: TranscriptionResult, directory: Path, stem: str) -> list[Path]:
    """`stem`.txt, .srt, .vtt and .json, in a folder of their own so that two users' 'clip.srt' never collide."""
    folder = _new_folder(directory)
    return [_write(folder / f"{stem}.{extension}", render(result, extension, stem)) for extension in FORMATS]


def write_comparison(plain: TranscriptionResult, speculative: TranscriptionResult, rows: list[list[str]],
                     directory: Path, stem: str) -> list[Path]:
    """The speculative transcript in every format, and `stem`.comparison.json with both results and the table."""
    paths = write_downloads(speculative, directory, stem)
    report = {"comparison": {row[0]: row[1:] for row in rows},
              "plain": result_record(plain, stem), "speculative": result_record(speculative, stem)}
    paths.append(_write(paths[0].parent / f"{stem}.comparison.json", json.dumps(report, ensure_ascii=False, indent=2)))
    return paths


def _new_folder(directory: Path) -> Path:
    folder = directory / uuid.uuid4().hex
    folder.mkdir(parents=True)
    return folder


def _write(path: Path, text: str) -> Path:
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path
