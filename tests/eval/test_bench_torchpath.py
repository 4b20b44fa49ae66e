"""eval/bench/torchpath.py: two checkouts' PyTorch paths interleaved, run on this checkout against itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.bench.torchpath import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_benchmark_compares_two_checkouts(capsys, tiny_en_dir, shared_audio):
    main(["--before", str(ROOT), "--after", str(ROOT), "--main", str(tiny_en_dir), "--clips", "1", "--repeats", "1",
          "--threads", "1", "--modes", "off,prompt-lookup"])
    output = capsys.readouterr().out
    assert "ASR_SPECDEC_NATIVE=0" in output
    assert "| off (off) |" in output and "| prompt-lookup (prompt-lookup) |" in output
    rows = [line for line in output.splitlines() if line.startswith("| off") or line.startswith("| prompt")]
    assert all(line.endswith("| 1/1 | 1/1 |") for line in rows), rows  # tokens == plain, == the other checkout


def test_a_folder_that_is_no_checkout_is_one_clear_error(capsys, tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["--before", str(tmp_path)])
    assert exited.value.code == 2 and "is not a checkout of this project" in capsys.readouterr().err
