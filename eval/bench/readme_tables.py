"""The documentation's numbers, from one benchmark run: runs the benchmarks docs/benchmarks.md quotes, keeps what
each printed and where and when it ran, and rewrites the marked regions of docs/benchmarks.md and the README from
that run.

    python -m eval.bench.readme_tables run [--output bench-results/readme] [--only speed,longform] [--threads 2]
    python -m eval.bench.readme_tables write [--output bench-results/readme] [--pages docs/benchmarks.md,README.md]

`run` runs each benchmark of BENCHMARKS in its own process, one after the other, and writes OUTPUT/NAME.md (what the
benchmark printed) and OUTPUT/run.json (for each benchmark: its command, the date, the commit and whether the work
tree had changes, the machine, its load when the benchmark started, and how long it took). `--only` reruns some
benchmarks and keeps the others' earlier results; `write` then says which benchmarks come from another commit.

`write` replaces, in each page, the text between `<!-- readme-tables:NAME -->` and `<!-- /readme-tables:NAME -->`
by benchmark NAME's output (its `##` headings made bold lines, so they do not break the page's outline), or by a
region made from the run (REGIONS: `run`, the run's provenance: date, commit, machine and command of each
benchmark; `headline`, the README's table of headline numbers, from the speed benchmark); and the web app's quoted
figures (app/measured.json) from the speed and drafters results. Prose around the regions should quote no number
of its own: every number comes from the regions. A new region is one entry in BENCHMARKS (a benchmark's output)
or in REGIONS (made from the outputs), and its two markers in a page.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from ..paths import PROJECT_ROOT
from .cli import HelpFormatter

# name -> the benchmark's arguments, as the README quotes them (the threads are added from --threads)
BENCHMARKS = {
    "speed": ["eval.bench.speed", "--repeats", "2"],
    "avx2": ["eval.bench.speed", "--isa", "avx2", "--skip", "steps,batch,cold", "--repeats", "2",
             "--compute-types", "float32,int8:float32"],
    "avxvnni": ["eval.bench.speed", "--isa", "avxvnni", "--skip", "steps,batch,cold", "--repeats", "2",
                "--compute-types", "float32,int8:float32"],
    "beams": ["eval.bench.speed", "--beam-size", "5", "--skip", "steps,batch,cold", "--repeats", "2",
              "--compute-types", "bfloat16:float32"],
    "longform": ["eval.bench.longform", "--main", "base", "--repeats", "2"],
    "draft_schedules": ["eval.bench.draft_schedules", "--limit", "4"],
    "drafters": ["eval.bench.drafters"],
    "duel": ["eval.bench.duel", "--main", "base", "--systems", "ours-plain,ours-spec,hf-assisted",
             "--batch-sizes", "1,8,16", "--repeats", "3", "--no-memory"],
    "server": ["eval.bench.server", "--requests", "16", "--time-limit", "420"],
    "streaming": ["eval.bench.streaming", "--dtype", "bfloat16"],
    "text": ["eval.bench.text"],
    "recipe": ["eval.bench.recipe", "--main", "base", "--repeats", "2"],
    "dropin": ["eval.bench.dropin", "--main", "base", "--repeats", "2"],
    "speakers": ["eval.bench.speakers", "--main", "base", "--repeats", "5"],
    "sizes": ["eval.bench.sizes", "--repeats", "2", "--compute-types", "float32,int8",
              "--default-mode-types", "auto", "--skip", "memory"],
}
PAGES = ("docs/benchmarks.md", "README.md")  # the pages `write` rewrites, relative to the project root
REGION = re.compile(r"(<!-- readme-tables:(?P<name>[\w-]+) -->\n)(.*?)(<!-- /readme-tables:(?P=name) -->)", re.S)


def git(*arguments: str) -> str:
    done = subprocess.run(["git", *arguments], cwd=PROJECT_ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def machine() -> str:
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        names = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo.read_text(), re.M)
        model = names[0] if names else model
    return f"{model}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"


def command_line(name: str, threads: int) -> list[str]:
    return ["python", "-m", *BENCHMARKS[name], "--threads", str(threads)]


def run(output: Path, names: list[str], threads: int) -> int:
    output.mkdir(parents=True, exist_ok=True)
    record_path = output / "run.json"
    record = json.loads(record_path.read_text()) if record_path.is_file() else {}
    for name in names:
        command = command_line(name, threads)
        print(f"{name}: {shlex.join(command)}", file=sys.stderr, flush=True)
        entry = {"command": shlex.join(command), "commit": git("rev-parse", "--short", "HEAD"),
                 "changed_files": bool(git("status", "--porcelain", "--untracked-files=no")),
                 "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                 "machine": machine(), "cpus": os.cpu_count(), "load_average": round(os.getloadavg()[0], 2)}
        started = time.monotonic()
        done = subprocess.run([sys.executable, *command[1:]], cwd=PROJECT_ROOT, capture_output=True, text=True)
        entry["seconds"] = round(time.monotonic() - started)
        if done.returncode != 0:
            print(f"{name} failed (exit {done.returncode}); its earlier result is kept:\n{done.stderr[-2000:]}",
                  file=sys.stderr)
            continue
        (output / f"{name}.md").write_text(done.stdout)
        record[name] = entry
        record_path.write_text(json.dumps(record, indent=2) + "\n")
    return 0


def provenance(record: dict) -> str:
    commits = {entry["commit"] for entry in record.values()}
    lines = ["| benchmark | command | date | commit | machine (load when it started) | took |",
             "|---|---|---|---|---|---|"]
    for name, entry in record.items():
        commit = entry["commit"] + (" + changes" if entry["changed_files"] else "")
        lines.append(f"| {name} | `{entry['command']}` | {entry['date']} | {commit} | {entry['machine']} "
                     f"({entry['load_average']:g}) | {entry['seconds'] // 60} min {entry['seconds'] % 60} s |")
    loaded = [name for name, entry in record.items() if entry["load_average"] > entry.get("cpus", os.cpu_count())]
    if loaded:
        lines.append(f"\n{', '.join(loaded)} started with more runnable work than CPUs (load average above the CPU "
                     "count): other processes competed for the CPUs, so their times and ratios are unreliable.")
    if len(commits) > 1:
        lines.append(f"\nThese benchmarks ran at {len(commits)} different commits ({', '.join(sorted(commits))}).")
    return "\n".join(lines) + "\n"


def run_region(output: Path, record: dict) -> str:
    return provenance(record)


def headline_region(output: Path, record: dict) -> str | None:
    """The README's headline numbers: from the speed benchmark's clip and long-file tables, ours at `auto` plain
    and speculative and at float32, against faster-whisper and transformers; then where they were measured."""
    if "speed" not in record or not (output / "speed.md").is_file():
        return None
    printed, entry = (output / "speed.md").read_text(), record["speed"]
    auto = re.search(r"auto = ([\w:]+)", printed)
    tables = markdown_tables(printed)
    clips = next((rows for rows in tables if rows and {"system", "total s", "text = float32"} <= set(rows[0])), [])
    long = next((rows for rows in tables if rows and {"system", "seconds", "vs faster-whisper int8"} <= set(rows[0])),
                [])
    if not auto or not clips:
        return None
    length = re.search(r"([\d.]+) s of audio, sequential", printed)
    long_seconds = {row["system"]: row["seconds"] for row in long}
    long_seconds["transformers generate()"] = long_seconds.get("transformers generate(return_timestamps=True)", "")
    wanted = dict.fromkeys([f"ours {auto[1]}, plain", f"ours {auto[1]}, quantized-self", "ours float32, plain"])
    rows = [row for name in wanted for row in clips if row["system"] == name]
    rows += [row for row in clips if not row["system"].startswith("ours ")]
    count = clips[0]["text = float32"].split("/")[-1]  # "12/12": of the clips
    lines = [f"| system | {count} clips, s | vs faster-whisper int8 | "
             f"{length[1] + '-s file' if length else 'long file'}, s | WER |", "|---|---|---|---|---|"]
    for row in rows:
        name = row["system"].replace("quantized-self", "speculative (quantized-self)")
        if row["system"].startswith(f"ours {auto[1]},"):
            name += " (`auto` here)"
        lines.append(f"| {name} | {row['total s']} | {row['vs faster-whisper int8']} | "
                     f"{long_seconds.get(row['system'], '')} | {row['WER']} |")
    lines.append(f"\n`{entry['command']}`, {entry['date']}, commit {entry['commit']}, {entry['machine']}: "
                 f"{auto[0]} on this CPU.")
    return "\n".join(lines) + "\n"


def sizes_region(output: Path, record: dict) -> str | None:
    """The README's sizes table: from the size benchmark's per-shape tables, faster-whisper int8's whole call beside
    ours' default (auto, default mode) and ours' fastest plain compute type; then the pair's projection."""
    if "sizes" not in record or not (output / "sizes.md").is_file():
        return None
    printed, entry = (output / "sizes.md").read_text(), record["sizes"]
    tables = markdown_tables(printed)
    lines = ["| size | faster-whisper int8 | ours default | vs faster-whisper int8 (whole / ms a token) | "
             "ours' fastest plain |", "|---|---|---|---|---|"]
    for rows in tables:
        whole = next((key for key in (rows[0] if rows else {}) if key.startswith("whole call")), None)
        if not whole or "system" not in rows[0]:
            continue
        shape = next(iter(rows[0]))
        by_name = {row["system"]: row for row in rows}
        reference = by_name.get("faster-whisper int8")
        default = next((row for name, row in by_name.items() if name.startswith("ours auto (")
                        and ", default mode" in name), None)
        plain = [row for name, row in by_name.items() if name.startswith("ours ") and name.endswith("plain")]
        if not reference or not default or not plain:
            continue
        fastest = min(plain, key=lambda row: number(row[whole]))
        ratios = default["vs faster-whisper int8 (whole / encoder / token)"].split(" / ")
        label, chosen = default["system"].removeprefix("ours ").split(", default mode")
        # the mode the default resolved to (runs before it was printed drafted with quantized-self: speculative)
        chosen = f"mode {chosen.strip(' ()')}" if chosen else "speculative"
        fastest_label = fastest["system"].rsplit("(", 1)[-1].split(")")[0]  # the compute type it resolved to
        lines.append(f"| {shape} | {reference[whole]} | {default[whole]} ({label}, {chosen}) | {ratios[0]} / "
                     f"{ratios[2]} | {fastest[whole]} ({fastest_label}) |")
    if len(lines) == 2:
        return None
    pair = next((rows for rows in tables if rows and "main step" in rows[0]), [])
    for row in pair:
        if "a = 0.8" in row:
            draft = next(key for key in row if key.startswith("draft step"))
            lines.append(f"\nlarge-v3 ⟵ distil-large-v3-shaped assistant, {row[next(iter(row))]}: main step "
                         f"{row['main step']}, draft step {row[draft]}, projected {row['a = 0.8']} faster-whisper "
                         "int8 at acceptance 0.8.")
    lines.append(f"\n`{entry['command']}`, {entry['date']}, commit {entry['commit']}, {entry['machine']}; "
                 + (re.search(r"kernel build [^\n]+", printed)[0] if "kernel build" in printed else "") + ".")
    return "\n".join(lines) + "\n"


# regions made from the run rather than printed by one benchmark: name -> (results folder, run record) -> text,
# or None where the run has no result for it
REGIONS = {"run": run_region, "headline": headline_region, "sizes-headline": sizes_region}


def as_region(printed: str) -> str:
    text = re.sub(r"^#+ (.+)$", r"**\1**", printed.strip(), flags=re.M)
    return text + "\n"


def markdown_tables(text: str) -> list[list[dict[str, str]]]:
    """Every Markdown table in `text`, as rows keyed by the header's cells."""
    tables, lines = [], text.splitlines()
    for index in range(len(lines) - 1):
        if lines[index].startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[index + 1].strip()):
            header = [cell.strip() for cell in lines[index].strip().strip("|").split("|")]
            rows = []
            for line in lines[index + 2:]:
                if not line.startswith("|"):
                    break
                rows.append(dict(zip(header, (cell.strip() for cell in line.strip().strip("|").split("|")))))
            tables.append(rows)
    return tables


def number(cell: str) -> float:
    return float(cell.strip("*x%s "))


def compute_type_figures(speed_output: str) -> dict:
    """compute type -> speed vs float32 and clips with float32's text, from the speed benchmark's clip table
    (its rows "ours TYPE, plain")."""
    table = next((rows for rows in markdown_tables(speed_output)
                  if rows and {"system", "total s", "text = float32"} <= set(rows[0])), [])
    plain = {row["system"].removeprefix("ours ").removesuffix(", plain"): row for row in table
             if row["system"].startswith("ours ") and row["system"].endswith(", plain")}
    if "float32" not in plain:
        return {}
    reference = number(plain["float32"]["total s"])
    figures = {}
    for name, row in plain.items():
        same, clips = (int(part) for part in row["text = float32"].split("/"))
        figures[name] = {"speed_vs_float32": round(reference / number(row["total s"]), 2), "same_text": same,
                         "clips": clips}
    return figures


def drafter_figures(drafters_output: str) -> dict:
    """mode -> total-time speedup over our plain loop, from the drafters benchmark's table (the first row whose
    name, before any parenthesis, is the mode)."""
    from asr_specdec.core.modes import MODES

    table = next((rows for rows in markdown_tables(drafters_output)
                  if rows and {"mode", "speedup vs plain"} <= set(rows[0])), [])
    figures = {}
    for row in table:
        mode = row["mode"].split(" (")[0]
        if mode in MODES and mode not in figures and row["speedup vs plain"].endswith("x"):
            figures[mode] = number(row["speedup vs plain"])
    return figures


def write_app_figures(output: Path, record: dict, path: Path) -> list[str]:
    """The app's quoted figures (app/measured.json) from the same run; returns what was rewritten."""
    measured = json.loads(path.read_text())
    done = []
    for name, key, parse in (("speed", "compute_types", compute_type_figures),
                             ("drafters", "drafters", drafter_figures)):
        if name in record and (output / f"{name}.md").is_file():
            printed = (output / f"{name}.md").read_text()
            figures = parse(printed)
            if figures:
                measured[key] = figures
                done.append(name)
            build = re.search(r"kernels: ([^,\n]+)", printed)
            if name == "speed" and build:
                measured["build"] = build[1].strip()
    if done:
        # the figures not rewritten keep their own run's provenance (each part of the source names its command)
        kept = [part for part in measured.get("source", "").split("; ") for name in ("speed", "drafters")
                if name not in done and part.startswith(f"python -m {BENCHMARKS[name][0]} ")]
        measured["source"] = "; ".join([f"{record[name]['command']} ({record[name]['date']}, commit "
                                        f"{record[name]['commit']})" for name in done] + kept)
        path.write_text(json.dumps(measured, indent=2, ensure_ascii=False) + "\n")
    return done


def rewrite(text: str, output: Path, record: dict) -> tuple[str, list[str]]:
    """(`text` with every region the run has a result for rewritten, the names of those it has none for)."""
    missing = []

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name in REGIONS:
            body = REGIONS[name](output, record)
        elif name in record and (output / f"{name}.md").is_file():
            body = as_region((output / f"{name}.md").read_text())
        else:
            body = None
        if body is None:
            missing.append(name)
            return match.group(0)
        return match.group(1) + body + match.group(4)

    return REGION.sub(replace, text), missing


def write(output: Path, pages: list[Path], app_figures: Path | None = None) -> int:
    record_path = output / "run.json"
    if not record_path.is_file():
        print(f"error: no benchmark run in {output} (run `python -m eval.bench.readme_tables run` first)",
              file=sys.stderr)
        return 2
    record = json.loads(record_path.read_text())
    for page in pages:
        updated, missing = rewrite(page.read_text(), output, record)
        page.write_text(updated)
        regions = [match["name"] for match in REGION.finditer(updated)]
        print(f"rewrote {len(regions) - len(missing)} of {len(regions)} regions in {page}"
              + (f"; no result for {', '.join(missing)} (kept as they were)" if missing else ""), file=sys.stderr)
    if app_figures is not None:
        done = write_app_figures(output, record, app_figures)
        print(f"{app_figures}: " + (f"figures from {', '.join(done)}" if done else "kept (no speed or drafters "
                                    "result)"), file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    lines = __doc__.split("\n\n", 1)
    parser = argparse.ArgumentParser(prog="python -m eval.bench.readme_tables", description=lines[0],
                                     epilog=lines[1], formatter_class=HelpFormatter)
    parser.add_argument("action", choices=("run", "write"))
    parser.add_argument("--output", default="bench-results/readme", help="folder of the run's results")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="run: these benchmarks (comma-separated)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="run: torch threads per benchmark")
    parser.add_argument("--pages", default=",".join(str(PROJECT_ROOT / page) for page in PAGES),
                        help="write: the files to rewrite (comma-separated)")
    parser.add_argument("--app-figures", default=str(PROJECT_ROOT / "app" / "measured.json"),
                        help="write: the web app's quoted figures, rewritten from the speed and drafters results "
                             "('' leaves them)")
    args = parser.parse_args(argv)
    output = Path(args.output)
    if args.action == "write":
        pages = [Path(page) for page in args.pages.split(",") if page]
        return write(output, pages, Path(args.app_figures) if args.app_figures else None)
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    return run(output, names, args.threads)


if __name__ == "__main__":
    sys.exit(main())
