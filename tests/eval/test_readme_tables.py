"""eval.bench.readme_tables: the pages' marked regions rewritten from one run's outputs, each benchmark's
provenance listed, the README's headline table made from the speed benchmark's output, regions without a result
left alone, and the real pages' regions all known benchmarks or regions."""

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
    assert readme_tables.main(["write", "--output", str(run), "--pages", str(readme), "--app-figures", ""]) == 0
    text = readme.read_text()
    assert "stale 8.4 s" not in text and "| plain | 1.16 |" in text and "**long audio, base**" in text
    assert "**the long file**\n\nplain 1.81 s\n<!-- /readme-tables:speed -->" in text
    assert parts[3] in text and text.startswith("intro 1") and text.endswith("end\n")
    assert "| longform | `python -m eval.bench.longform --threads 2` | 2026-11-25 12:00 UTC | abc1234 |" in text
    assert "\nspeed started with more runnable work than CPUs" in text
    assert "def5678 + changes" in text and "2 different commits (abc1234, def5678)" in text
    assert "no result for duel" in capsys.readouterr().err


SPEED = """# speed, base, 2 threads, torch 2.13.0+cpu, best of 2; kernels: native avx2, auto = float32
## 12 shared clips, one at a time

| system | total s | per clip ms (median) | vs faster-whisper int8 | vs faster-whisper float32 | WER | \
text = float32 | acceptance |
|---|---|---|---|---|---|---|---|
| ours float32, plain | 8.00 | 600 | 0.97x | 1.45x | 1.14% | 12/12 |  |
| ours float32, quantized-self | 7.90 | 590 | 0.99x | 1.48x | 1.14% | 12/12 | 98% |
| ours int8:float32, plain | 4.00 | 300 | 1.96x | 2.92x | 1.14% | 11/12 |  |
| faster-whisper int8 | 8.30 | 610 | 1.00x | 1.49x | 1.14% | 8/12 |  |
"""
DRAFTERS = """| mode | total s | speedup vs plain | decoder-only speedup | acceptance | tokens/main pass | identical |
|---|---|---|---|---|---|---|
| off | 10.00 | 1.00x | 1.00x |  | 1.00 | yes |
| off (float32 argmax) | 11.00 | 0.91x | 0.71x |  | 1.00 | yes |
| quantized-self | 8.00 | 1.25x | 1.67x | 98% | 6.70 | yes |
| assistant (main copy) | 12.50 | 0.80x | 0.58x | 100% | 7.18 | yes |
| hf off | 13.00 | 1.00x |  |  |  | yes |
"""


def test_write_gives_the_app_the_same_runs_figures(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "speed.md").write_text(SPEED)
    (run / "drafters.md").write_text(DRAFTERS)
    (run / "run.json").write_text(json.dumps({"speed": entry("abc1234"), "drafters": entry("abc1234")}))
    figures = tmp_path / "measured.json"
    figures.write_text((PROJECT / "app" / "measured.json").read_text())
    readme = tmp_path / "README.md"
    readme.write_text(region("run", "old\n"))
    assert readme_tables.main(["write", "--output", str(run), "--pages", str(readme),
                               "--app-figures", str(figures)]) == 0
    measured = json.loads(figures.read_text())
    assert measured["compute_types"] == {"float32": {"speed_vs_float32": 1.0, "same_text": 12, "clips": 12},
                                         "int8:float32": {"speed_vs_float32": 2.0, "same_text": 11, "clips": 12}}
    assert measured["drafters"] == {"off": 1.0, "quantized-self": 1.25, "assistant": 0.8}
    assert "abc1234" in measured["source"]
    assert measured["build"] == "native avx2"  # the app quotes the figures only on the build they came from


def test_figures_a_run_has_no_result_for_keep_their_own_runs_provenance(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "speed.md").write_text(SPEED)
    (run / "run.json").write_text(json.dumps({"speed": entry("abc1234"), "drafters": entry("def5678")}))
    figures = tmp_path / "measured.json"
    earlier = json.loads((PROJECT / "app" / "measured.json").read_text())
    earlier["source"] = ("python -m eval.bench.speed --repeats 2 (2026-01-01 00:00 UTC, commit 0000000); "
                         "python -m eval.bench.drafters --threads 2 (2026-01-01 00:00 UTC, commit 1111111)")
    figures.write_text(json.dumps(earlier))
    assert readme_tables.write_app_figures(run, json.loads((run / "run.json").read_text()), figures) == ["speed"]
    measured = json.loads(figures.read_text())
    assert measured["drafters"] == earlier["drafters"]
    assert "abc1234" in measured["source"] and "commit 1111111" in measured["source"]
    assert "0000000" not in measured["source"] and "def5678" not in measured["source"]


def test_the_apps_figures_file_covers_every_mode_and_cpu_type():
    from app.compute_guide import CPU_TYPES
    from app.measured import COMPUTE_TYPES, DRAFTERS
    from asr_specdec.core.modes import MODES

    assert set(DRAFTERS) == set(MODES) and set(COMPUTE_TYPES) == set(CPU_TYPES)


def test_write_without_a_run_says_so(tmp_path, capsys):
    assert readme_tables.main(["write", "--output", str(tmp_path / "none"), "--pages", str(tmp_path / "R.md")]) == 2
    assert "no benchmark run in" in capsys.readouterr().err


def test_every_region_of_the_pages_names_a_benchmark_or_a_region_of_the_run():
    names = [match["name"] for page in readme_tables.PAGES
             for match in readme_tables.REGION.finditer((PROJECT / page).read_text())]
    assert len(names) == len(set(names))
    assert set(names) == set(readme_tables.BENCHMARKS) | set(readme_tables.REGIONS)
    readme = [match["name"] for match in readme_tables.REGION.finditer((PROJECT / "README.md").read_text())]
    assert readme == ["headline", "sizes-headline"]


LONG_FILE = """## the long file

64.4 s of audio, sequential 30-s windows with timestamps
| system | seconds | vs our plain at its compute type | vs faster-whisper int8 | text = our plain |
|---|---|---|---|---|
| ours float32, plain | 4.47 | 1.00x | 1.09x | yes |
| ours float32, quantized-self | 3.91 | 1.14x | 1.24x | yes |
| faster-whisper int8 | 4.85 |  | 1.00x |  |
"""


def test_the_headline_table_is_made_from_the_speed_benchmarks_output(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "speed.md").write_text(SPEED + "\n" + LONG_FILE)
    (run / "run.json").write_text(json.dumps({"speed": entry("abc1234")}))
    readme = tmp_path / "README.md"
    readme.write_text("intro\n" + region("headline", "stale\n") + "\nend\n")
    assert readme_tables.main(["write", "--output", str(run), "--pages", str(readme), "--app-figures", ""]) == 0
    rows = readme_tables.markdown_tables(readme.read_text())[0]
    assert [row["system"] for row in rows] == ["ours float32, plain (`auto` here)",
                                               "ours float32, speculative (quantized-self) (`auto` here)",
                                               "faster-whisper int8"]  # auto = float32: its rows once
    assert rows[1] == {"system": "ours float32, speculative (quantized-self) (`auto` here)", "12 clips, s": "7.90",
                       "vs faster-whisper int8": "0.99x", "64.4-s file, s": "3.91", "WER": "1.14%"}
    assert "stale" not in readme.read_text() and "commit abc1234" in readme.read_text()


def test_a_headline_without_a_speed_result_is_kept(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({}))
    readme = tmp_path / "README.md"
    readme.write_text(region("headline", "kept\n"))
    assert readme_tables.main(["write", "--output", str(run), "--pages", str(readme), "--app-figures", ""]) == 0
    assert "kept" in readme.read_text() and "no result for headline" in capsys.readouterr().err


def sizes_output(default_name: str = "ours auto (int8), default mode") -> str:
    """What eval.bench.sizes prints, made by its own row functions from made-up timings."""
    from eval.bench import sizes

    def timing(encoder, whole, double):
        return sizes.Timing(encoder=encoder, whole=whole, double=double, made=[100, 200],
                            whole_decoding=whole - encoder, double_decoding=double - encoder)
    small = {"faster-whisper int8": timing(1.0, 4.0, 7.0), "ours float32 (float32), plain": timing(1.2, 3.5, 6.0),
             "ours int8 (int8), plain": timing(0.8, 2.5, 4.0), default_name: timing(0.8, 2.0, 3.0)}
    costs = {"main_step": 0.1, "draft_step": 0.01, "verification": 0.12}
    pair = {"int8": {"costs_s": costs, "speedup_by_acceptance": {str(a): 1.0 + a for a in sizes.ACCEPTANCES},
                     "acceptance_for": {"2.0": 0.75, "3.0": None}}}
    return "\n".join(["# sizes on random weights: 2 threads; kernel build avx2; auto: 768 wide int8", "",
                      *sizes.speed_rows("small", small, 100), "", *sizes.pair_rows(pair, 5, 100)]) + "\n"


def test_the_sizes_table_is_made_from_the_size_benchmarks_output(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "sizes.md").write_text(sizes_output())
    (run / "run.json").write_text(json.dumps({"sizes": entry("abc1234")}))
    readme = tmp_path / "README.md"
    readme.write_text("intro\n" + region("sizes-headline", "stale\n") + "\nend\n")
    assert readme_tables.main(["write", "--output", str(run), "--pages", str(readme), "--app-figures", ""]) == 0
    text = readme.read_text()
    rows = readme_tables.markdown_tables(text)[0]
    # faster-whisper 4.00 s against the default's 2.00 s; ms a token 30.0 against 10.0; the fastest plain is int8
    assert rows == [{"size": "small", "faster-whisper int8": "4.00 s",
                     "ours default": "2.00 s (auto (int8), speculative)",
                     "vs faster-whisper int8 (whole / ms a token)": "2.00x / 3.00x",
                     "ours' fastest plain": "2.50 s (int8)"}]
    assert "main step 100.0 ms, draft step 10.0 ms (0.10), projected 1.80x faster-whisper int8 at acceptance 0.8" \
        in text
    assert "stale" not in text and "commit abc1234" in text and "kernel build avx2" in text
    # a run that printed the mode the default resolved to says it
    (run / "sizes.md").write_text(sizes_output("ours auto (int8), default mode (off)"))
    assert readme_tables.main(["write", "--output", str(run), "--pages", str(readme), "--app-figures", ""]) == 0
    assert readme_tables.markdown_tables(readme.read_text())[0][0]["ours default"] == "2.00 s (auto (int8), mode off)"
