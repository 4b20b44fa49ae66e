"""The eval's one loader over every data source, and its one-line errors for bad data (no models loaded)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile

from asr_specdec.whisper.io.audio import load_audio
from eval.run import main
from eval.sources import DatasetError, load_utterances

PROJECT = Path(__file__).resolve().parents[2]


def write_flac(source: Path, target: Path) -> Path:
    samples, rate = soundfile.read(source, dtype="float32")
    target.parent.mkdir(parents=True, exist_ok=True)
    soundfile.write(target, samples, rate, format="FLAC")
    return target


def make_librispeech(root: Path, shared: Path, utterances: dict[str, tuple[str, str]]) -> Path:
    """An OpenSLR-layout folder: {utterance id: (shared clip name, transcript)}, ids SPEAKER-CHAPTER-NNNN."""
    for utterance_id, (clip, transcript) in utterances.items():
        speaker, chapter, _ = utterance_id.split("-")
        folder = root / speaker / chapter
        write_flac(shared / clip, folder / f"{utterance_id}.flac")
        with (folder / f"{speaker}-{chapter}.trans.txt").open("a") as file:
            file.write(f"{utterance_id} {transcript}\n")
    return root


def make_hub_layout(root: Path, shared: Path, clips: dict[str, str]) -> Path:
    """A local copy of openslr/librispeech_asr's layout: config clean, split test, parquet with its columns."""
    import datasets

    features = datasets.Features({
        "file": datasets.Value("string"), "audio": datasets.Audio(sampling_rate=16000),
        "text": datasets.Value("string"), "speaker_id": datasets.Value("int64"),
        "chapter_id": datasets.Value("int64"), "id": datasets.Value("string")})
    records = [{"file": f"{utterance_id}.flac", "audio": {"bytes": (shared / clip).read_bytes(), "path": clip},
                "text": text, "speaker_id": 1, "chapter_id": 2, "id": utterance_id}
               for utterance_id, (clip, text) in clips.items()]
    import pyarrow

    # built through arrow: datasets' own Audio encoder needs torchcodec, which is not installed here
    table = pyarrow.Table.from_pylist(records)
    (root / "clean" / "test").mkdir(parents=True)
    datasets.Dataset(table).cast(features).to_parquet(str(root / "clean" / "test" / "0000.parquet"))
    (root / "README.md").write_text("---\nconfigs:\n- config_name: clean\n  data_files:\n  - split: test\n"
                                    "    path: clean/test/*.parquet\n---\n")
    return root


def cli_error(capsys, *args) -> str:
    code = main([*map(str, args)])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.strip().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_manifest_keeps_null_references(manifest, shared_audio):
    utterances = load_utterances(str(shared_audio / "manifest.jsonl"))
    assert [u.id for u in utterances] == [entry["audio"] for entry in manifest]
    assert [u.reference for u in utterances] == [entry["reference"] for entry in manifest]
    assert all(Path(u.audio).is_file() for u in utterances)
    # a folder holding manifest.jsonl is the same source
    assert load_utterances(str(shared_audio)) == utterances


def test_openslr_directory_and_its_split_folders(tmp_path, shared_audio):
    root = tmp_path / "LibriSpeech"
    make_librispeech(root / "test-clean", shared_audio, {"1-2-0000": ("LJ002-0020.wav", "IN EIGHTEEN THIRTEEN"),
                                                         "1-2-0001": ("goforward.wav", "GO FORWARD TEN METERS")})
    make_librispeech(root / "dev-clean", shared_audio, {"3-4-0000": ("forever.wav", "FEELS LIKE")})
    test = load_utterances(str(root), "clean", "test")
    assert [(u.id, u.reference) for u in test] == [("1-2-0000", "IN EIGHTEEN THIRTEEN"),
                                                  ("1-2-0001", "GO FORWARD TEN METERS")]
    assert [u.id for u in load_utterances(str(root), "clean", "validation")] == ["3-4-0000"]
    assert load_utterances(str(root / "test-clean")) == test
    assert len(load_audio(test[1].audio)) == pytest.approx(2.79 * 16000, rel=0.01)


def test_audiofolder_metadata(tmp_path, shared_audio):
    write_flac(shared_audio / "goforward.wav", tmp_path / "test" / "clips" / "a.flac")
    (tmp_path / "test" / "metadata.csv").write_text("file_name,transcription\nclips/a.flac,go forward ten meters\n")
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "metadata.jsonl").write_text(json.dumps({"file_name": "none.wav", "text": "x"}) + "\n")
    utterances = load_utterances(str(tmp_path), split="test")
    assert [(u.id, u.reference) for u in utterances] == [("clips/a.flac", "go forward ten meters")]
    with pytest.raises(DatasetError, match="none.wav"):
        load_utterances(str(tmp_path), split="train")


def test_datasets_streaming_of_a_local_copy_with_librispeech_columns(tmp_path, shared_audio):
    root = make_hub_layout(tmp_path / "librispeech_asr", shared_audio,
                           {"1-2-0000": ("librivox-0880.wav", "HE WAS NOT AN ILL DISPOSED YOUNG MAN"),
                            "1-2-0001": ("LJ002-0035.wav", "EIGHT THE PRESS YARD")})
    utterances = list(load_utterances(str(root), "clean", "test"))
    assert [(u.id, u.reference) for u in utterances] == [("1-2-0000", "HE WAS NOT AN ILL DISPOSED YOUNG MAN"),
                                                         ("1-2-0001", "EIGHT THE PRESS YARD")]
    expected, _ = soundfile.read(shared_audio / "librivox-0880.wav", dtype="float32")
    assert isinstance(utterances[0].audio, bytes)
    np.testing.assert_allclose(load_audio(utterances[0].audio), expected, atol=1e-6)
    with pytest.raises(DatasetError, match="config other") as caught:
        load_utterances(str(root), "other", "test")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("offline", ["HF_HUB_OFFLINE", "closed endpoint"])
def test_hub_dataset_fails_fast_when_the_hub_is_unreachable(monkeypatch, offline):
    if offline == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: refused at once
    started = time.perf_counter()
    with pytest.raises(DatasetError, match="hub is unreachable"):
        load_utterances("librispeech", "clean", "test")
    assert time.perf_counter() - started < 10


def test_the_command_says_so_in_one_line_when_the_hub_is_unreachable(tmp_path):
    environment = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                   "ASR_SPECDEC_CACHE": str(tmp_path / "cache")}
    process = subprocess.run([sys.executable, "-m", "eval.run", "--dataset", "librispeech", "--output",
                              str(tmp_path / "out")], cwd=PROJECT, env=environment, capture_output=True,
                             text=True, timeout=120)
    assert process.returncode == 2
    assert process.stderr.strip().splitlines()[-1].startswith("error: cannot stream 'openslr/librispeech_asr'")
    assert "Traceback" not in process.stderr
    assert not (tmp_path / "out" / "rows.jsonl").exists()


def test_bad_data_gives_one_line_errors(capsys, tmp_path, shared_audio):
    root = make_librispeech(tmp_path / "ls", shared_audio, {"1-2-0000": ("LJ002-0020.wav", "IN EIGHTEEN THIRTEEN")})
    with (root / "1" / "2" / "1-2.trans.txt").open("a") as file:
        file.write("1-2-0001 A LINE WITHOUT AUDIO\n")
    assert "1-2-0001.flac" in cli_error(capsys, "--dataset", root, "--output", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    assert "empty" in cli_error(capsys, "--dataset", tmp_path / "empty")
    assert "unknown dataset 'librispeach'" in cli_error(capsys, "--dataset", "librispeach")
    assert "no such file" in cli_error(capsys, "--dataset", tmp_path / "missing.jsonl")
    assert "--limit must be at least 1" in cli_error(capsys, "--dataset", shared_audio, "--limit", "0")
    assert "unknown mode" in cli_error(capsys, "--dataset", shared_audio, "--modes", "off,fastest")
    assert "positive integers" in cli_error(capsys, "--dataset", shared_audio, "--num-draft-tokens", "4,x")
    bad_manifest = tmp_path / "bad.jsonl"
    bad_manifest.write_text(json.dumps({"audio": str(shared_audio / "LJ002-0020.wav")}) + '\n{"reference": "x"}\n')
    assert "bad.jsonl:2" in cli_error(capsys, "--dataset", bad_manifest)
    assert not (tmp_path / "out").exists()
