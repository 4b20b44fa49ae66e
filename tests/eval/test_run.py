"""The whole eval, offline, with real weights (tiny.en): an OpenSLR-layout directory, a `datasets` copy
with LibriSpeech's columns, and the shared manifest; numbers checked, reports written, resume and Ctrl-C."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from eval.evaluator import UtteranceEvaluator
from eval.metrics import normalize
from eval.run import main

from .test_sources import make_hub_layout, make_librispeech

pytestmark = pytest.mark.slow
FAST = ["--main", "tiny.en", "--threads", "1"]


def run_eval(capsys, *args) -> tuple[int, str]:
    code = main([*FAST, *map(str, args)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
    return code, captured.err


def report(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text())


def png_width(path: Path) -> int:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">I", header[16:20])[0]


def test_librispeech_directory_with_a_corrupt_file_and_a_draft_length_sweep(capsys, tmp_path, shared_audio):
    root = make_librispeech(tmp_path / "test-clean", shared_audio, {
        # the reference says FOURTEEN where the speaker says "1813": one substitution in two words
        "1-2-0000": ("LJ002-0020.wav", "IN EIGHTEEN FOURTEEN"),
        "1-2-0001": ("LJ002-0035.wav", "CORRUPT"),
        "1-2-0002": ("LJ002-0035.wav", "EIGHT THE PRESS YARD"),
    })
    corrupt = root / "1" / "2" / "1-2-0001.flac"
    corrupt.write_bytes(corrupt.read_bytes()[:3000])  # a FLAC cut short: unreadable in the middle of the run
    out = tmp_path / "out"
    code, err = run_eval(capsys, "--dataset", root, "--modes", "off,quantized-self,prompt-lookup",
                         "--num-draft-tokens", "3,6", "--output", out)
    assert code == 1, err  # finished, with a failed utterance
    result = report(out)
    labels = ["off", "quantized-self k=3", "quantized-self k=6", "prompt-lookup k=3", "prompt-lookup k=6"]
    assert [entry["variant"] for entry in result["summary"]] == labels
    for entry in result["summary"]:
        assert (entry["utterances"], entry["failed"]) == (2, 1)
        assert entry["wer"] == pytest.approx(1 / 6)  # "in 1813" vs "in 1814" + 4 words right
        assert entry["parity"] == 1.0
    assert {row["id"] for row in result["rows"] if row["status"] == "failed"} == {"1-2-0001"}
    assert "corrupt or truncated" in result["failed"]["1-2-0001"]
    assert len(result["rows"]) == 15 and len((out / "rows.jsonl").read_text().splitlines()) == 15
    markdown = (out / "report.md").read_text()
    assert sum(line.startswith("| quantized-self | 3 |") for line in markdown.splitlines()) == 1
    assert result["models"]["main"]["sha256"] == "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
    assert result["machine"]["cpu"] and result["libraries"]["torch"]
    assert png_width(out / "report.png") > 1500  # three panels: the sweep adds speedup against draft length


def test_ctrl_c_keeps_finished_rows_and_resume_continues(capsys, tmp_path, shared_audio, monkeypatch):
    root = make_hub_layout(tmp_path / "librispeech_asr", shared_audio,
                           {"1-2-0000": ("LJ002-0020.wav", "IN EIGHTEEN THIRTEEN"),
                            "1-2-0001": ("LJ002-0035.wav", "EIGHT THE PRESS YARD"),
                            "1-2-0002": ("goforward.wav", "GO FORWARD TEN METERS")})
    out = tmp_path / "out"
    arguments = ["--dataset", root, "--config", "clean", "--split", "test", "--modes", "off,prompt-lookup",
                 "--output", out]
    evaluate = UtteranceEvaluator.evaluate
    calls = []

    def interrupted_on_the_second_utterance(self, utterance):
        calls.append(utterance.id)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return evaluate(self, utterance)

    monkeypatch.setattr(UtteranceEvaluator, "evaluate", interrupted_on_the_second_utterance)
    code, err = run_eval(capsys, *arguments)
    assert code == 130 and "--resume" in err
    first_rows = (out / "rows.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in first_rows] == ["1-2-0000"] * 2
    assert report(out)["summary"][0]["utterances"] == 1  # the report so far is written too

    monkeypatch.setattr(UtteranceEvaluator, "evaluate", evaluate)
    code, err = run_eval(capsys, *arguments, "--resume", "--modes", "off")
    assert code == 2 and "other settings (modes)" in err
    code, err = run_eval(capsys, *arguments, "--resume", "--limit", "2")
    assert code == 0, err
    code, err = run_eval(capsys, *arguments, "--resume")
    assert code == 0, err
    rows = (out / "rows.jsonl").read_text().splitlines()
    assert rows[:2] == first_rows  # kept as they were, not decoded again
    assert [json.loads(line)["id"] for line in rows] == ["1-2-0000"] * 2 + ["1-2-0001"] * 2 + ["1-2-0002"] * 2
    result = report(out)
    assert [entry["utterances"] for entry in result["summary"]] == [3, 3]
    assert result["summary"][1]["parity"] == 1.0


def test_shared_manifest(capsys, tmp_path, shared_audio, manifest):
    out = tmp_path / "out"
    code, err = run_eval(capsys, "--dataset", shared_audio / "manifest.jsonl", "--modes", "off,quantized-self",
                         "--output", out)
    assert code == 0, err
    result = report(out)
    plain, drafted = result["summary"]
    assert plain["utterances"] == drafted["utterances"] == len(manifest) == 12
    assert drafted["parity"] == 1.0 and drafted["acceptance_rate"] > 0.5 and drafted["tokens_per_main_pass"] > 2
    referenced = [entry for entry in manifest if entry["reference"]]
    assert plain["reference_words"] == sum(len(normalize(entry["reference"]).split()) for entry in referenced)
    assert plain["wer"] <= 0.05  # measured: 3 errors in 88 words for tiny.en (see test_wer.py)
    no_reference = [row for row in result["rows"] if row["reference"] is None]
    assert len(no_reference) == 2 * (len(manifest) - len(referenced))
    assert all(row["word_errors"] is None for row in no_reference)
    assert all(row["seconds"] > 0 and row["rtf"] > 0 for row in result["rows"])


def test_transcribe_dataset_writes_rows_and_parquet(tmp_path):
    import pyarrow.parquet

    from eval.transcribe_dataset import main as transcribe

    samples = Path(__file__).resolve().parents[2] / "samples"
    out = tmp_path / "out"
    assert transcribe(["--dataset", str(samples), "--main", "tiny.en", "--mode", "prompt-lookup", "--threads", "1",
                       "--output", str(out)]) == 0
    table = pyarrow.parquet.read_table(out / "transcripts.parquet").to_pylist()
    assert [row["variant"] for row in table] == ["prompt-lookup"] * 3  # no plain-greedy baseline rows
    assert all(row["word_errors"] == 0 and row["tokens"] and row["stats"]["main_passes"] > 0 for row in table)
