"""eval/bench.py, the duel: one real end-to-end run on the tiny.en pack (offline, every system, batch sizes 1
and 2), its parity column, failure reporting, argument errors, and one peak-memory process."""

from __future__ import annotations

import contextlib
import io
import json
import resource
from pathlib import Path

import numpy as np
import pytest

from eval.bench.duel import Cell, Workload, build_cells, main, memory_ratio, notes, result_rows, time_systems
from eval.bench.memory import measure_peak_rss, save_workload
from eval.bench.report import markdown_table
from eval.bench.systems import (
    ASSISTANT_INT8_SELF,
    ASSISTANT_MAIN,
    SYSTEMS,
    Decoded,
    Setup,
    System,
    pair_assistant,
    text_tokens,
)

pytest.importorskip("faster_whisper")
BATCH_SIZES = (1, 2)


@pytest.fixture(scope="module")
def duel(tmp_path_factory, pack_cache):
    """One run of the command: (exit code, stdout, the JSON report, output folder)."""
    output = tmp_path_factory.mktemp("duel")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("HF_DATASETS_OFFLINE", "1")
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            code = main(["--main", "tiny.en", "--utterances", "2", "--batch-sizes", "1,2", "--no-memory",
                         "--output", str(output)])
    report = json.loads((output / "bench.json").read_text()) if (output / "bench.json").exists() else None
    return code, stdout.getvalue(), report, output


def test_duel_writes_json_markdown_and_png(duel):
    code, stdout, report, output = duel
    assert code == 0
    assert (output / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    markdown = (output / "bench.md").read_text()
    assert markdown.count("\n| ") == len(SYSTEMS) * len(BATCH_SIZES) + 1  # header + one row per system and size
    assert "| system | batch |" in stdout
    assert report["config"]["main"] == "tiny.en" and report["config"]["batch_sizes"] == list(BATCH_SIZES)


def test_duel_has_a_row_per_system_and_batch_size(duel):
    rows = duel[2]["rows"]
    assert [(row["system"], row["batch_size"]) for row in rows] == [
        (key, size) for key in SYSTEMS for size in BATCH_SIZES]
    status = {(row["system"], row["batch_size"]): row["status"] for row in rows}
    assert status.pop(("hf-assisted", 2)) == "n/a"  # transformers' assisted generation refuses batches
    assert set(status.values()) == {"ok"}
    refused = next(row for row in rows if row["status"] == "n/a")
    assert "batch" in refused["reason"]


def test_ours_are_exact_and_speculation_is_measured(duel):
    rows = {(row["system"], row["batch_size"]): row for row in duel[2]["rows"]}
    for key in ("ours-plain", "ours-spec"):
        for size in BATCH_SIZES:
            assert rows[key, size]["mismatched_utterances"] == []
            assert rows[key, size]["throughput"] > 0
    assert rows["ours-plain", 1]["speedup_same_batch"] == pytest.approx(1.0)
    assert rows["ours-spec", 1]["acceptance_rate"] > 0.5 and rows["ours-spec", 1]["tokens_per_main_pass"] > 1
    assert rows["ours-plain", 1]["acceptance_rate"] is None


def test_transformers_assistant_is_the_int8_self_sharing_the_encoder(duel):
    pairing = duel[2]["assistant_pairing"]
    assert pairing["assistant"] == ASSISTANT_INT8_SELF
    assert pairing["shared"] and pairing["encoder_runs"] == 1 and pairing["assistant_steps"] > 0
    assert pairing["equals_plain"]
    assert "int8 self" in next(row["label"] for row in duel[2]["rows"] if row["system"] == "hf-assisted")


def _workload(utterances: int = 2) -> Workload:
    clips = [np.zeros(16000, dtype=np.float32), np.zeros(8000, dtype=np.float32)]
    return Workload(["a.wav", "b.wav"], clips, [index % 2 for index in range(utterances)])


def test_parity_column_says_no_for_different_tokens():
    workload, reference = _workload(), [[10, 11, 12], [20, 21]]
    exact, different = Cell("ours-plain", "plain", 1), Cell("hf-plain", "theirs", 1)
    exact.record([Decoded([10, 11, 12]), Decoded([20, 21])], [(1, 0.5), (1, 0.5)], reference)
    different.record([Decoded([10, 11, 12]), Decoded([20, 99])], [(2, 2.0)], reference)
    rows = result_rows({("ours-plain", 1): exact, ("hf-plain", 1): different}, workload)
    assert rows[0]["mismatched_utterances"] == [] and rows[1]["mismatched_utterances"] == [1]
    assert rows[1]["mismatched_tokens"] == {"1": [20, 99]}
    table = markdown_table(rows)
    assert table[2].split(" | ")[9] == "yes" and table[3].split(" | ")[9] == "no (1/2)"
    assert rows[1]["speedup_same_batch"] == pytest.approx(0.5)
    assert rows[1]["latency_seconds"] == pytest.approx(2.0) and rows[0]["latency_seconds"] == pytest.approx(0.5)


def test_text_tokens_drop_whisper_specials():
    assert text_tokens([50257, 50362, 464, 13, 50256, 50256], end_of_text=50256) == [464, 13]


class _Broken(System):
    key, label = "hf-plain", "broken"

    def decode(self, audios):
        raise RuntimeError("out of\nmemory")


def test_failing_and_unbuildable_systems_are_reported_not_raised():
    setup = Setup("tiny.en", 1, ct2_dir=None, ct2_missing="no CTranslate2 checkpoint here")
    systems, cells = build_cells(["fw-int8"], setup, [1, 2])
    assert not systems and {cell.status for cell in cells.values()} == {"failed"}
    assert "no CTranslate2 checkpoint here" in cells["fw-int8", 1].reason
    cells = {("hf-plain", 1): Cell("hf-plain", "broken", 1)}
    time_systems({"hf-plain": _Broken()}, cells, _workload(), [1], repeats=1, reference=[[1], [2]])
    assert cells["hf-plain", 1].status == "failed" and cells["hf-plain", 1].reason == "RuntimeError: out of memory"
    row = markdown_table(result_rows(cells, _workload()))[2]
    assert "failed: RuntimeError: out of memory" in row and "\n" not in row


def test_assistant_falls_back_to_the_main_model_when_the_int8_self_cannot_run(monkeypatch):
    import eval.bench.systems as bench_systems

    class Loaded:
        model = object()

        @staticmethod
        def processor(audio, sampling_rate, return_tensors):
            return type("Features", (), {"input_features": None})

    def refuse(model):
        raise TypeError("cannot quantize")

    monkeypatch.setattr(bench_systems, "int8_self_assistant", refuse)  # as Setup.int8_assistant builds it
    setup = Setup("tiny.en", 1, loaded=Loaded())
    check = pair_assistant(setup, np.zeros(1600, dtype=np.float32))
    assert setup.assistant == ASSISTANT_MAIN and not check.shared and "cannot quantize" in check.error


def test_memory_ratio_and_its_note():
    rows = [{"system": "ours-plain", "batch_size": size, "peak_rss_mib": 1000.0} for size in (1, 16)]
    rows += [{"system": "ours-spec", "batch_size": 16, "peak_rss_mib": 1400.0}]
    ratio = memory_ratio(rows)
    assert ratio == {"batch_size": 16, "ratio": pytest.approx(1.4)}
    config = {"utterances": 8, "clips": ["a"], "audio_seconds": 1.0, "main": "base", "threads": 2, "repeats": 1,
              "systems": ["ours-plain", "ours-spec"], "batch_sizes": [1, 16]}
    lines = notes({"config": config, "memory_ratio": ratio})
    assert any("1.40x (ABOVE the 1.3x bound)" in line for line in lines)
    assert any(line.startswith("Batch sizes 16 exceed the 8 utterances") for line in lines)
    assert memory_ratio([{"system": "ours-plain", "batch_size": 1, "peak_rss_mib": None}]) is None


def test_peak_memory_is_measured_in_a_fresh_process(tmp_path):
    from asr_specdec.weights.packs import assemble_pack

    (tmp_path / "ct2").mkdir()
    setup = Setup("tiny.en", 1, ct2_dir=assemble_pack("tiny.en", tmp_path / "ct2"))
    workload = save_workload([np.zeros(16000, dtype=np.float32)], [0], tmp_path / "workload.npz")
    ballast = np.ones(96 << 20)  # 768 MiB in this process, which a child must not inherit as its peak
    measured = measure_peak_rss("fw-int8", 1, setup, workload)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 > ballast.nbytes / 2**20
    assert 50 < measured["peak_rss_mib"] < 700
    assert measured["vm_hwm_mib"] == pytest.approx(measured["peak_rss_mib"], rel=0.1)
    with pytest.raises(RuntimeError, match="unknown system 'fw-nope'"):
        measure_peak_rss("fw-nope", 1, setup, workload)


@pytest.mark.parametrize("arguments, message", [
    (["--batch-sizes", "0,4"], "--batch-sizes takes positive integers"),
    (["--batch-sizes", "four"], "--batch-sizes takes positive integers"),
    (["--systems", "ours-plain,vllm"], "--systems takes some of"),
    (["--utterances", "0"], "--utterances must be at least 1"),
    (["--threads", "-1"], "--threads must be at least 1"),
    (["--frobnicate"], "unrecognized arguments"),
    (["--main", "./no/such/model", "--utterances", "1"], "no such model directory"),
    (["--main", "tiny.en", "--audio", "/no/such/folder"], "no manifest.jsonl in /no/such/folder"),
])
def test_bad_arguments_are_one_line_and_exit_2(arguments, message, capsys, tmp_path):
    try:
        code = main([*arguments, "--output", str(tmp_path / "out")])
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error:") and message in err and "Traceback" not in err
    assert not Path(tmp_path / "out").exists()


def test_a_peak_counts_the_child_processes_a_load_waited_for():
    """A first load converts in a child process (asr_specdec/weights/conversion_process.py): the probes' load peak
    is what this process held before it, plus the child's own peak."""
    import subprocess
    import sys

    from eval.bench.memory import peak_beside_children

    subprocess.run([sys.executable, "-c", "block = bytearray(300 * 2**20)"], check=True)  # touches 300 MiB
    peak, children = peak_beside_children(own_peak=10 * 2**20, resident_before=50 * 2**20)
    assert children >= 300 * 2**20 and peak == 50 * 2**20 + children
    assert peak_beside_children(own_peak=2**40, resident_before=0)[0] == 2**40
    assert peak_beside_children(own_peak=10 * 2**20, resident_before=50 * 2**20, first_load=False) == (10 * 2**20, 0)
