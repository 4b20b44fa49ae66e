"""Shared-CPU benchmark: ours (default and plain) and faster-whisper int8 on the shared clips, alone and beside a
competitor the benchmark starts itself (another 2-thread transcription process in a loop: faster-whisper int8, or
a second copy of ours), interleaved; each system's slowdown and the ratio between them; then repeated CLI runs of
one clip beside the competitor (docs/compute.md, Sharing a CPU).

    python -m eval.bench.shared_cpu [--repeats 3] [--threads 2] [--baseline CHECKOUT] [--cli-runs 5]

Every system runs in its own warm process (eval/bench/shared_cpu_worker.py) and is timed on one pass over the clips
at a time; within each repeat the conditions (alone, beside each competitor) are taken in turn and, within each
condition, the systems, so the ratios compare passes taken side by side. `--baseline` measures ours (default) from
another checkout too (e.g. the commit before a change, as `git worktree add`), in the same run. The table gives the
median over repeats (and the range). The server with concurrent clients has its own benchmark: `python -m
eval.bench.server --clients 1,2`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..paths import PROJECT_ROOT, SHARED_AUDIO

CLIPS = ("libri-1088-134315-0000.wav", "librivox-0870.wav", "librivox-0880.wav", "common_voice_en_651325.mp3")
WORKER = Path(__file__).with_name("shared_cpu_worker.py")
SYSTEMS = {"ours": "ours, default (quantized-self)", "ours-plain": "ours, plain", "fw-int8": "faster-whisper int8"}
COMPETITORS = {"fw-int8": "beside faster-whisper int8", "ours": "beside a second copy of ours"}
SETTLE_SECONDS = 3.0  # a started competitor's load and warm-up before the measured passes


class Worker:
    """One system's warm process."""

    def __init__(self, system: str, threads: int, clips: list[str], checkout: Path, fw_dir: str):
        environment = dict(os.environ, PYTHONPATH=str(checkout), FW_DIR=fw_dir)
        self.process = subprocess.Popen([sys.executable, str(WORKER), system, str(threads), *clips], cwd=checkout,
                                        env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        bufsize=1)
        ready = self._answer()
        self.texts = ready["texts"]

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"a benchmark worker exited ({self.process.wait()})")
        return json.loads(line)

    def round(self) -> float:
        self.process.stdin.write("round\n")
        return self._answer()["seconds"]

    def loop(self) -> None:
        self.process.stdin.write("loop\n")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


def cli_runs(clip: str, runs: int, threads: int) -> list[float]:
    """Wall seconds of `runs` fresh `python -m asr_specdec.transcribe` processes on `clip`."""
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "asr_specdec.transcribe", clip, "--language", "en", "--threads",
                        str(threads)], cwd=PROJECT_ROOT, check=True, capture_output=True)
        seconds.append(time.perf_counter() - started)
    return seconds


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def report(times: dict, labels: dict, conditions: list[str]) -> list[str]:
    lines = ["| system | " + " | ".join(["alone"] + [COMPETITORS[c] for c in conditions[1:]]) + " |",
             "|---|" + "---|" * len(conditions)]
    for key, label in labels.items():
        alone = statistics.median(times[key, "alone"])
        cells = [summary(times[key, "alone"])]
        for condition in conditions[1:]:
            median = statistics.median(times[key, condition])
            cells.append(f"{summary(times[key, condition])} = {median / alone:.2f}x slower")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if "fw-int8" in labels:
        lines.append("")
        for key, label in labels.items():
            if key == "fw-int8":
                continue
            ratios = [statistics.median(times["fw-int8", c]) / statistics.median(times[key, c]) for c in conditions]
            lines.append(f"- {label} vs faster-whisper int8: " + ", ".join(
                f"{condition} {ratio:.2f}x" for condition, ratio in zip(conditions, ratios)))
    return lines


def main(argv=None) -> int:
    from .cli import bench_parser

    parser = bench_parser(__doc__, "eval.bench.shared_cpu")
    parser.add_argument("--audio", default=str(SHARED_AUDIO), help="folder of the clips")
    parser.add_argument("--clips", default=",".join(CLIPS), help="comma-separated clip names in --audio")
    parser.add_argument("--threads", type=int, default=2, help="threads of every system and competitor")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--competitors", default="fw-int8,ours", help=f"of {','.join(COMPETITORS)} ('': alone only)")
    parser.add_argument("--baseline", type=Path, help="another checkout whose ours (default) is measured too")
    parser.add_argument("--cli-runs", type=int, default=5, help="fresh CLI runs of the first clip beside the "
                        "first competitor (0: none)")
    parser.add_argument("--output", type=Path, help="write the table and the raw times here (JSON)")
    args = parser.parse_args(argv)

    from asr_specdec.weights.packs import assemble_pack

    clips = [str(Path(args.audio) / name) for name in args.clips.split(",")]
    conditions = ["alone", *filter(None, args.competitors.split(","))]
    labels = dict(SYSTEMS)
    with tempfile.TemporaryDirectory() as scratch:
        fw_dir = str(Path(scratch) / "ct2-base")
        Path(fw_dir).mkdir()
        assemble_pack(os.environ.get("MAIN", "base"), Path(fw_dir))
        workers = {key: Worker(key, args.threads, clips, PROJECT_ROOT, fw_dir) for key in SYSTEMS}
        if args.baseline:
            labels["baseline"] = f"ours, default, at {args.baseline.name}"
            workers["baseline"] = Worker("ours", args.threads, clips, args.baseline.resolve(), fw_dir)
        exact = workers["ours"].texts == workers["ours-plain"].texts
        times = {(key, condition): [] for key in workers for condition in conditions}
        try:
            for repeat in range(args.repeats):
                for condition in conditions[repeat % len(conditions):] + conditions[:repeat % len(conditions)]:
                    competitor = None
                    if condition != "alone":
                        competitor = Worker(condition, args.threads, clips[:1], PROJECT_ROOT, fw_dir)
                        competitor.loop()
                        time.sleep(SETTLE_SECONDS)
                    order = list(workers)
                    order = order[repeat % len(order):] + order[:repeat % len(order)]
                    for key in order:
                        times[key, condition].append(workers[key].round())
                        print(f"repeat {repeat + 1} {condition:8} {key:10} {times[key, condition][-1]:.2f} s",
                              flush=True)
                    if competitor:
                        competitor.stop()
            cli = {}
            if args.cli_runs:
                competitor = Worker(conditions[1], args.threads, clips[:1], PROJECT_ROOT, fw_dir) \
                    if len(conditions) > 1 else None
                if competitor:
                    competitor.loop()
                    time.sleep(SETTLE_SECONDS)
                cli = {"beside": conditions[1] if competitor else "alone",
                       "seconds": cli_runs(clips[0], args.cli_runs, args.threads)}
                if competitor:
                    competitor.stop()
        finally:
            for worker in workers.values():
                worker.stop()
    lines = report(times, labels, conditions)
    lines.append(f"- ours default == ours plain (text on every clip): {exact}")
    if cli:
        seconds = cli["seconds"]
        lines.append(f"- {len(seconds)} CLI runs of {Path(clips[0]).name} {cli['beside']}: "
                     f"{min(seconds):.2f}-{max(seconds):.2f} s, slowest / fastest {max(seconds) / min(seconds):.2f}")
    print("\n".join(lines))
    if args.output:
        args.output.mkdir(parents=True, exist_ok=True)
        (args.output / "shared_cpu.md").write_text("\n".join(lines) + "\n")
        (args.output / "shared_cpu.json").write_text(json.dumps(
            {"clips": clips, "threads": args.threads, "times": {f"{k}|{c}": v for (k, c), v in times.items()},
             "cli": cli, "exact": exact}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
