"""eval/bench/streaming.py end to end on one short clip with tiny.en: a table row per clip, every update identical
across the three ways of decoding it. (The numbers themselves are the benchmark's business, not a test's.)"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from eval.bench.streaming import main

pytestmark = pytest.mark.slow


def test_streaming_bench_runs_and_every_update_is_identical(tmp_path, pack_cache):
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["--main", "tiny.en", "--clips", "goforward.wav", "--no-joined", "--threads", "1",
                     "--output", str(tmp_path / "raw.json")])
    assert code == 0
    rows = [line for line in stdout.getvalue().splitlines() if line.startswith("| goforward.wav |")]
    assert len(rows) == 1 and rows[0].rstrip().endswith("| yes |")
    raw = json.loads((tmp_path / "raw.json").read_text())["goforward.wav"]
    assert raw["identical"] and raw["decodes"] >= 2
    assert len(raw["seconds"]["plain"]) == len(raw["seconds"]["hypothesis"]) == raw["decodes"]
