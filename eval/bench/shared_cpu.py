"""Shared-CPU benchmark: ours (default and plain) and faster-whisper int8 on the shared clips, alone and beside a
competitor the benchmark starts itself (another 2-thread transcription process in a loop: faster-whisper int8, or
a second copy of ours), interleaved; each system's slowdown and the ratio between them; then repeated CLI runs of
one clip beside the competitor; and, as its own section, the server with one and two concurrent clients
(docs/compute.md, Sharing a CPU).

    python -m eval.bench.shared_cpu [--repeats 3] [--threads 2] [--baseline CHECKOUT] [--cli-runs 5]
    python -m eval.bench.shared_cpu --sections server [--repeats 3] [--threads 2]

Section `systems` (the default): every system runs in its own warm process (eval/bench/shared_cpu_worker.py) and is
timed on one pass over the clips at a time; within each repeat the conditions (alone, alone at one thread, beside
each competitor) are taken in turn and, within each condition, the systems, so the ratios compare passes taken side by
side. Each pass also reports the CPU seconds the system's process used (all its threads), so the report gives the
cores each system had on average in each condition: a system losing time beside a competitor with its CPU seconds
unchanged lost the CPU time the scheduler gave the other job, not time waiting for its own threads.
`--baseline` measures ours (default) from another checkout too (e.g. the commit before a change, as `git worktree
add`), in the same run. The table gives the median over repeats (and the range).

Section `server`: our OpenAI-compatible server (`python -m asr_specdec.serve`, the default model and mode, `--threads`
the benchmark's) and faster-whisper int8 as its users serve concurrent requests (one `WhisperModel` with
`num_workers=2`, transcribing from Python threads, in a warm process of its own), each timed on one client sending
every clip in turn and on two clients at once, each sending every clip (closed loop: wall seconds until both
finish); the two systems alternate within each repeat. Every answer is checked against that clip's text from one
client alone. The server at more clients, and batched against unbatched: `python -m eval.bench.server`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from ..paths import PROJECT_ROOT, SHARED_AUDIO
from .server import START_TIMEOUT, Server, posted, read_clip, serve_options, transcribe
from .shared_cpu_worker import concurrent_passes

CLIPS = ("libri-1088-134315-0000.wav", "librivox-0870.wav", "librivox-0880.wav", "common_voice_en_651325.mp3")
WORKER = Path(__file__).with_name("shared_cpu_worker.py")
SECTIONS = ("systems", "server")
SYSTEMS = {"ours": "ours, default", "ours-plain": "ours, plain", "fw-int8": "faster-whisper int8"}
COMPETITORS = {"fw-int8": "beside faster-whisper int8", "ours": "beside a second copy of ours"}
ALONE = {"alone": "alone", "one-thread": "alone, 1 thread"}  # conditions without a competitor
CLIENTS = {1: "1 client", 2: "2 clients"}
SETTLE_SECONDS = 3.0  # a started competitor's load and warm-up before the measured passes

Passes = Callable[[int], tuple[float, list[list[str]]]]  # clients -> (wall seconds, each client's texts)


class Worker:
    """One system's warm process."""

    def __init__(self, system: str, threads: int, clips: list[str], checkout: Path, fw_dir: str):
        environment = dict(os.environ, PYTHONPATH=str(checkout), FW_DIR=fw_dir)
        self.process = subprocess.Popen([sys.executable, str(WORKER), system, str(threads), *clips], cwd=checkout,
                                        env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        bufsize=1)
        ready = self._answer()
        self.texts = ready["texts"]
        self.mode = ready.get("mode")  # ours' resolved drafting mode; None for faster-whisper

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"a benchmark worker exited ({self.process.wait()})")
        return json.loads(line)

    def round(self, threads: int | None = None) -> tuple[float, float]:
        """(wall seconds, CPU seconds of the process) of one pass over the clips, at `threads` if given."""
        self.process.stdin.write("round\n" if threads is None else f"round {threads}\n")
        answer = self._answer()
        return answer["seconds"], answer["cpu_seconds"]

    def clients(self, count: int) -> tuple[float, list[list[str]]]:
        self.process.stdin.write(f"clients {count}\n")
        answer = self._answer()
        return answer["seconds"], answer["texts"]

    def loop(self) -> None:
        self.process.stdin.write("loop\n")

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@contextmanager
def beside(condition: str, threads: int, clip: str, fw_dir: str):
    """Runs the block beside `condition`'s competitor transcribing `clip` in a loop (settled before the block, stopped
    after it, whatever the block raises); "alone": no competitor."""
    if condition in ALONE:
        yield
        return
    competitor = Worker(condition, threads, [clip], PROJECT_ROOT, fw_dir)
    try:
        competitor.loop()
        time.sleep(SETTLE_SECONDS)
        yield
    finally:
        competitor.stop()


def cli_runs(clip: str, runs: int, threads: int) -> list[float]:
    """Wall seconds of `runs` fresh `python -m asr_specdec.transcribe` processes on `clip`."""
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "asr_specdec.transcribe", clip, "--language", "en", "--threads",
                        str(threads)], cwd=PROJECT_ROOT, check=True, capture_output=True)
        seconds.append(time.perf_counter() - started)
    return seconds


def rotated(items: list, repeat: int) -> list:
    """`items` starting at the repeat's own place, so no item is always measured first."""
    start = repeat % len(items)
    return items[start:] + items[:start]


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def table(times: dict, labels: dict, conditions: list, headers: dict, relation: str) -> list[str]:
    """A row per system, a column per condition: median (range), and each later condition's median over the
    first's ("= 2.10x slower")."""
    lines = ["| system | " + " | ".join(headers[condition] for condition in conditions) + " |",
             "|---|" + "---|" * len(conditions)]
    for key, label in labels.items():
        first = statistics.median(times[key, conditions[0]])
        cells = [summary(times[key, conditions[0]])]
        for condition in conditions[1:]:
            median = statistics.median(times[key, condition])
            cells.append(f"{summary(times[key, condition])} = {median / first:.2f}x {relation}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def versus(times: dict, labels: dict, conditions: list, headers: dict, reference: str) -> list[str]:
    """Each other system against `reference` in every condition: its median time over theirs (above 1: faster)."""
    lines = []
    for key, label in labels.items():
        if key == reference:
            continue
        ratios = [statistics.median(times[reference, c]) / statistics.median(times[key, c]) for c in conditions]
        lines.append(f"- {label} vs {labels[reference]}: " + ", ".join(
            f"{headers[condition]} {ratio:.2f}x" for condition, ratio in zip(conditions, ratios)))
    return lines


def cores(times: dict, cpu: dict, labels: dict, conditions: list, headers: dict) -> list[str]:
    """Per system, the CPU seconds of a pass (all its threads) and the cores it had on average (CPU seconds over
    wall seconds), medians in each condition: where a system's CPU seconds do not grow beside a competitor, what it
    lost is the CPU time the scheduler gave the other job, not time spent waiting for its own threads."""
    lines = []
    for key, label in labels.items():
        cells = [f"{headers[c]} {statistics.median(cpu[key, c]):.2f} CPU-s on "
                 f"{statistics.median(u / w for u, w in zip(cpu[key, c], times[key, c], strict=True)):.2f} cores"
                 for c in conditions]
        lines.append(f"- {label}: " + ", ".join(cells))
    return lines


def report(times: dict, labels: dict, conditions: list[str], cpu: dict | None = None) -> list[str]:
    headers = {**ALONE, **COMPETITORS}
    lines = table(times, labels, conditions, headers, "slower")
    if "fw-int8" in labels:
        lines += ["", *versus(times, labels, conditions, headers, "fw-int8")]
    if cpu is not None:
        lines += cores(times, cpu, labels, conditions, headers)
    return lines


def measure_systems(args, clips: list[str], fw_dir: str) -> tuple[list[str], dict]:
    """The systems section: (its report lines, its raw results)."""
    conditions = ["alone", *(["one-thread"] if args.one_thread and args.threads > 1 else []),
                  *filter(None, args.competitors.split(","))]
    workers = {key: Worker(key, args.threads, clips, PROJECT_ROOT, fw_dir) for key in SYSTEMS}
    labels = dict(SYSTEMS, ours=f"{SYSTEMS['ours']} ({workers['ours'].mode})")
    if args.baseline:
        workers["baseline"] = Worker("ours", args.threads, clips, args.baseline.resolve(), fw_dir)
        labels["baseline"] = f"ours, default ({workers['baseline'].mode}), at {args.baseline.name}"
    exact = workers["ours"].texts == workers["ours-plain"].texts
    times = {(key, condition): [] for key in workers for condition in conditions}
    cpu = {(key, condition): [] for key in workers for condition in conditions}
    try:
        for repeat in range(args.repeats):
            for condition in rotated(conditions, repeat):
                with beside(condition, args.threads, clips[0], fw_dir):
                    for key in rotated(list(workers), repeat):
                        seconds, used = workers[key].round(1 if condition == "one-thread" else None)
                        times[key, condition].append(seconds)
                        cpu[key, condition].append(used)
                        print(f"repeat {repeat + 1} {condition:10} {key:10} {seconds:.2f} s, {used:.2f} CPU-s",
                              flush=True)
        cli = {}
        if args.cli_runs:
            condition = next((c for c in conditions if c not in ALONE), "alone")
            with beside(condition, args.threads, clips[0], fw_dir):
                cli = {"beside": condition, "seconds": cli_runs(clips[0], args.cli_runs, args.threads)}
    finally:
        for worker in workers.values():
            worker.stop()
    lines = report(times, labels, conditions, cpu)
    lines.append(f"- ours default == ours plain (text on every clip): {exact}")
    if cli:
        seconds = cli["seconds"]
        lines.append(f"- {len(seconds)} CLI runs of {Path(clips[0]).name} {cli['beside']}: "
                     f"{min(seconds):.2f}-{max(seconds):.2f} s, slowest / fastest {max(seconds) / min(seconds):.2f}")
    return lines, {"times": {f"{k}|{c}": v for (k, c), v in times.items()},
                   "cpu_seconds": {f"{k}|{c}": v for (k, c), v in cpu.items()}, "cli": cli, "exact": exact}


def differing(client_texts: list[list[str]], references: list[str]) -> int:
    """How many of the clients' answers differ from the clip's reference text."""
    return sum(text != reference for texts in client_texts for text, reference in zip(texts, references, strict=True))


def time_clients(passes: dict[str, Passes], repeats: int) -> tuple[dict, dict, dict]:
    """(times by (system, clients), answers and differing answers by system). Each system first sends every clip
    from one client (the references) and from two (their one-off costs: a server's first batch of two rows), then
    `repeats` rounds of 1 and 2 clients, the systems' order rotating."""
    references = {key: run(1)[1][0] for key, run in passes.items()}
    answers, wrong = dict.fromkeys(passes, 0), dict.fromkeys(passes, 0)

    def checked(key: str, clients: int) -> float:
        seconds, texts = passes[key](clients)
        answers[key] += sum(len(client) for client in texts)
        wrong[key] += differing(texts, references[key])
        return seconds

    for key in passes:
        checked(key, max(CLIENTS))
    times = {(key, clients): [] for key in passes for clients in CLIENTS}
    for repeat in range(repeats):
        for key in rotated(list(passes), repeat):
            for clients in CLIENTS:
                times[key, clients].append(checked(key, clients))
                print(f"repeat {repeat + 1} server   {key:16} {CLIENTS[clients]:9} {times[key, clients][-1]:.2f} s",
                      flush=True)
    return times, answers, wrong


def server_report(times: dict, labels: dict, reference: str, answers: dict, wrong: dict) -> list[str]:
    lines = ["Wall seconds for 1 client sending every clip in turn, and for 2 clients at once, each sending every "
             "clip:", "", *table(times, labels, list(CLIENTS), CLIENTS, "the 1-client time"), "",
             *versus(times, labels, list(CLIENTS), CLIENTS, reference)]
    checks = [f"{label} {'yes' if not wrong[key] else 'NO'} ({answers[key] - wrong[key]}/{answers[key]})"
              for key, label in labels.items()]
    lines.append("- every answer equal to its clip's text from one client alone: " + ", ".join(checks))
    return lines


def http_passes(url: str, clips: list[str]) -> Passes:
    """Passes of clients posting the clips to the server at `url`."""
    import httpx

    uploads = [read_clip(Path(clip)) for clip in clips]
    # the httpx module as the client: a connection per request, as independent users' clients open
    return lambda clients: concurrent_passes(lambda upload: transcribe(httpx, url, upload), uploads, clients)


def served_mode(url: str, clip: str) -> str:
    """The drafting mode the server decoded a request in (its telemetry in verbose_json)."""
    import httpx

    return posted(httpx, url, read_clip(Path(clip)), response_format="verbose_json")["asr_specdec"]["mode"]


def start_server(main_model: str, threads: int, logs: Path) -> Server:
    server = Server("shared-cpu", serve_options(main_model, language="en", threads=threads), logs)
    try:
        server.wait_ready(time.monotonic() + START_TIMEOUT)
    except RuntimeError:
        print(server.log_path.read_text()[-4000:], file=sys.stderr)
        server.stop()
        raise
    return server


def measure_server(args, clips: list[str], fw_dir: str, main_model: str, logs: Path) -> tuple[list[str], dict]:
    """The server section: (its report lines, its raw results)."""
    worker = Worker("fw-int8-2workers", args.threads, clips, PROJECT_ROOT, fw_dir)
    try:
        server = start_server(main_model, args.threads, logs)
        try:
            labels = {"ours-server": f"ours' server, default ({served_mode(server.url, clips[0])})",
                      "fw-int8-2workers": "faster-whisper int8, num_workers=2"}
            passes = {"ours-server": http_passes(server.url, clips), "fw-int8-2workers": worker.clients}
            times, answers, wrong = time_clients(passes, args.repeats)
        finally:
            server.stop()
    finally:
        worker.stop()
    return server_report(times, labels, "fw-int8-2workers", answers, wrong), {
        "times": {f"{key}|{clients}": seconds for (key, clients), seconds in times.items()},
        "answers": answers, "differing": wrong}


def main(argv=None) -> int:
    from .cli import bench_parser

    parser = bench_parser(__doc__, "eval.bench.shared_cpu")
    parser.add_argument("--audio", default=str(SHARED_AUDIO), help="folder of the clips")
    parser.add_argument("--clips", default=",".join(CLIPS), help="comma-separated clip names in --audio")
    parser.add_argument("--threads", type=int, default=2, help="threads of every system and competitor")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sections", default="systems", help=f"of {','.join(SECTIONS)}")
    parser.add_argument("--competitors", default="fw-int8,ours", help=f"of {','.join(COMPETITORS)} ('': alone only)")
    parser.add_argument("--one-thread", action=argparse.BooleanOptionalAction, default=True,
                        help="time each system alone at 1 thread too (what a whole core of the machine gives it)")
    parser.add_argument("--baseline", type=Path, help="another checkout whose ours (default) is measured too")
    parser.add_argument("--cli-runs", type=int, default=5, help="fresh CLI runs of the first clip beside the "
                        "first competitor (0: none)")
    parser.add_argument("--output", type=Path, help="write the table, the raw times and the server's log here")
    args = parser.parse_args(argv)
    sections = list(filter(None, args.sections.split(",")))
    if not sections or set(sections) - set(SECTIONS):
        parser.error(f"--sections takes one or more of {','.join(SECTIONS)}")

    from asr_specdec.weights.packs import assemble_pack

    clips = [str(Path(args.audio) / name) for name in args.clips.split(",")]
    main_model = os.environ.get("MAIN", "base")
    if args.output:
        args.output.mkdir(parents=True, exist_ok=True)
    lines, raw = [], {"clips": clips, "threads": args.threads}
    with tempfile.TemporaryDirectory() as scratch:
        fw_dir = str(Path(scratch) / "ct2-base")
        Path(fw_dir).mkdir()
        assemble_pack(main_model, Path(fw_dir))
        if "systems" in sections:
            section_lines, section_raw = measure_systems(args, clips, fw_dir)
            lines += section_lines
            raw.update(section_raw)
        if "server" in sections:
            section_lines, raw["server"] = measure_server(args, clips, fw_dir, main_model, args.output or Path(scratch))
            lines += ["", *section_lines] if lines else section_lines
    print("\n".join(lines))
    if args.output:
        (args.output / "shared_cpu.md").write_text("\n".join(lines) + "\n")
        (args.output / "shared_cpu.json").write_text(json.dumps(raw, indent=1))
    return 0 if answers_agree(raw) else 1


def answers_agree(raw: dict) -> bool:
    """Whether every comparison of texts the run made came out equal (ours default == plain; every server
    answer == one client alone): a run that changed a text reports it and exits 1, as eval.bench.server does."""
    return raw.get("exact", True) and not any(raw.get("server", {}).get("differing", {}).values())


if __name__ == "__main__":
    sys.exit(main())
