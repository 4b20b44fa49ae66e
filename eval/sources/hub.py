"""Datasets that `datasets.load_dataset` streams: a model-hub id (LibriSpeech is `openslr/librispeech_asr`,
configs clean/other, splits test/validation/...) or a local folder of parquet files in the same layout.

Streaming reads only the rows asked for, so `--limit 50` does not download a whole split. The audio
column is read undecoded (its encoded bytes) and decoded by asr_specdec's own loader."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from .base import DatasetError, Utterance

LIBRISPEECH = "openslr/librispeech_asr"
REFERENCE_COLUMNS = ("text", "transcription", "sentence", "reference", "normalized_text")


def is_local_hub_layout(folder: Path) -> bool:
    """A folder `load_dataset` reads like a hub repository: parquet files, optionally a README with configs."""
    return next(itertools.islice(folder.rglob("*.parquet"), 1), None) is not None


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:300] or type(error).__name__


def _check_hub(name: str) -> None:
    from asr_specdec.weights.whisper_models import hub_reachable

    if not hub_reachable():
        raise DatasetError(
            f"cannot stream '{name}': it is no local path and the Hugging Face hub is unreachable (offline, or "
            "HF_HUB_OFFLINE is set); use a local OpenSLR LibriSpeech directory, a manifest .jsonl or an "
            "audiofolder directory instead")


def open_stream(name: str, config: str | None, split: str):
    """The streaming dataset, its audio column undecoded; a DatasetError naming what failed otherwise."""
    import datasets

    local = Path(name).is_dir()
    if not local:
        _check_hub(name)
    try:
        stream = datasets.load_dataset(name, config, split=split, streaming=True)
        features = stream.features or {}
        audio_column = next((column for column, feature in features.items()
                             if isinstance(feature, datasets.Audio)), "audio")
        if audio_column not in features:
            raise DatasetError(f"dataset '{name}' has no audio column (columns: {', '.join(features)})")
        return stream.cast_column(audio_column, datasets.Audio(decode=False)), audio_column
    except DatasetError:
        raise
    except Exception as error:  # datasets raises many types (DatasetNotFoundError, ValueError, HTTP errors)
        raise DatasetError(f"could not open dataset '{name}' (config {config}, split {split}): "
                           f"{_one_line(error)}") from None


def stream_utterances(name: str, config: str | None, split: str) -> Iterator[Utterance]:
    """Opens the stream now, so that a missing dataset or an unreachable hub fails before any model loads."""
    stream, audio_column = open_stream(name, config, split)
    reference_column = next((column for column in REFERENCE_COLUMNS if column in stream.features), None)
    return _utterances(iter(stream), name, split, audio_column, reference_column)


def _utterances(rows, name: str, split: str, audio_column: str, reference_column: str | None) -> Iterator[Utterance]:
    for index in itertools.count():
        try:
            row = next(rows)
        except StopIteration:
            return
        except Exception as error:  # a connection lost mid-stream must end the run cleanly, rows kept
            raise DatasetError(f"reading dataset '{name}' failed after {index} rows: {_one_line(error)}") from None
        audio = row[audio_column] or {}
        source = audio.get("bytes") or audio.get("path")
        if not source:
            raise DatasetError(f"dataset '{name}' row {index} has no audio bytes or path")
        utterance_id = str(row.get("id") or f"{split}-{index}")
        yield Utterance(utterance_id, source, row.get(reference_column) if reference_column else None)
