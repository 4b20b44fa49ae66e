"""eval.bench.readme_tables: the README's marked regions rewritten from one run's outputs, each benchmark's
provenance listed, regions without a result left alone, and the real README's regions all known benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

from eval.bench import readme_tables

PROJECT = Path(__file__).resolve().parents[2]


def region(name: str, body: str) -> str:
    return f"<!-- readme-tables:{name} -->\n{body}<!-- /readme-tables:{name} -->"


def entry(commit: str, changed: bool = False) -> dict:
    return {"command": "python -m eval.bench.longform --threads 2", "commit": commit, "changed_files": changed,
            "date": "2026-11-25 12:00 UTC", "machine": "Test CPU, 2 CPUs, Linux", "cpus": 2,
            "load_average": 3.5 if changed else 1.0, "seconds": 75}


def test_write_fills_the_regions_from_the_run(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "longform.md").write_text("# long audio, base\n\n| mode | s |\n|---|---|\n| plain | 1.16 |\n")
    (run / "speed.md").write_text("## the long file\n\nplain 1.81 s\n")
    (run / "run.json").write_text(json.dumps({"longform": entry("abc1234"), "speed": entry("def5678", True)}))
    readme = tmp_path / "README.md"
    parts = [region("run", "old\n"), region("longform", "stale 8.4 s\n"), region("speed", "old\n"),
             region("duel", "kept as it was\n")]
    readme.write_text("intro 1\n\n" + "\n\ntext\n".join(parts) + "\nend\n")
    assert readme_tables.main(["write", "--output", str(run), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "stale 8.4 s" not in text and "| plain | 1.16 |" in text and "**long audio, base**" in text
    assert "**the long file**\n\nplain 1.81 s\n<!-- /readme-tables:speed -->" in text
    assert parts[3] in text and text.startswith("intro 1") and text.endswith("end\n")
    assert "| longform | `python -m eval.bench.longform --threads 2` | 2026-11-25 12:00 UTC | abc1234 |" in text
    assert "\nspeed started with more runnable work than CPUs" in text
    assert "def5678 + changes" in text and "2 different commits (abc1234, def5678)" in text
    assert "no result for duel" in capsys.readouterr().err


def test_write_without_a_run_says_so(tmp_path, capsys):
    assert readme_tables.main(["write", "--output", str(tmp_path / "none"), "--readme", str(tmp_path / "R.md")]) == 2
    assert "no benchmark run in" in capsys.readouterr().err


def test_every_region_of_the_readme_names_a_benchmark_of_the_run():
    names = [match["name"] for match in readme_tables.REGION.finditer((PROJECT / "README.md").read_text())]
    assert "run" in names and len(names) == len(set(names))
    assert set(names) - {"run"} == set(readme_tables.BENCHMARKS)
