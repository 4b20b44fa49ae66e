"""The duel: our batched plain and speculative decoding against transformers' generate() (plain and assisted)
and faster-whisper, on the same audio and the same weights, interleaved in one run.

    python -m eval.bench.duel [--main base] [--batch-sizes 1,4,8,16] [--utterances 16] [--repeats 1]
                         [--systems ours-plain,ours-spec,hf-plain,hf-assisted,fw-fp32,fw-int8]
                         [--no-memory] [--threads N] [--output bench-results]

The shared clips are cycled to --utterances. After a warm-up, each repeat runs every batch size, and within
it every system, over the whole workload. Prints one Markdown table and writes bench.json, bench.md and
bench.png to --output. Every utterance's tokens are compared with ours plain greedy at batch size 1. Peak
memory is measured per system and batch size in a fresh process (eval/bench/memory.py). docs/bench.md says
what each column means.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..cli_args import OneLineParser
from .cli import bench_parser
from .harness import LANGUAGE, SAMPLE_RATE, add_common_flags, ct2_checkpoint, interleave, one_line, set_threads, timed
from .systems import SYSTEMS, Setup, System

DEFAULT_BATCH_SIZES = (1, 4, 8, 16)
DEFAULT_OUTPUT = "bench-results"
MEMORY_BOUND = 1.3  # issue 7: speculative peak RSS at most 1.3x plain at B=16


class BenchError(Exception):
    """A bad argument or unusable input: one line on stderr, exit 2."""


class Progress:
    """Phase lines on stderr, so that a long run shows where it is."""

    def __init__(self):
        self.started = time.monotonic()

    def __call__(self, message: str) -> None:
        print(f"[bench {time.monotonic() - self.started:6.1f} s] {message}", file=sys.stderr, flush=True)


@dataclass
class Workload:
    clip_names: list[str]
    clips: list  # 16-kHz samples, one array per clip
    order: list[int]  # the clip of each utterance

    @property
    def utterances(self) -> list:
        return [self.clips[index] for index in self.order]

    @property
    def audio_seconds(self) -> float:
        return sum(len(self.clips[index]) for index in self.order) / SAMPLE_RATE


@dataclass
class Cell:
    """One system at one batch size, over all repeats."""

    key: str
    label: str
    batch_size: int
    status: str = "ok"  # ok | n/a (refused) | failed
    reason: str = ""
    walls: list[float] = field(default_factory=list)  # seconds for the whole workload, per repeat
    latencies: list[float] = field(default_factory=list)  # mean seconds per utterance, per repeat
    mismatched: dict[int, list[int]] = field(default_factory=dict)  # utterance -> its first differing tokens
    drafted: int = 0
    accepted: int = 0
    new_tokens: int = 0
    main_passes: int = 0
    peak_rss_mib: float | None = None  # ru_maxrss of a fresh process
    vm_hwm_mib: float | None = None  # its /proc VmHWM, the same peak measured by the kernel's other counter
    memory_reason: str = ""

    def stop(self, status: str, reason: str) -> None:
        self.status, self.reason = status, reason

    def record(self, decoded: list, batch_walls: list[tuple[int, float]], reference: list[list[int]]) -> None:
        """One repeat: the decoded utterances in order, each batch's (rows, seconds), the reference tokens."""
        self.walls.append(sum(seconds for _, seconds in batch_walls))
        self.latencies.append(sum(rows * seconds for rows, seconds in batch_walls) / len(decoded))
        for index, (output, expected) in enumerate(zip(decoded, reference)):
            if output.tokens != expected:
                self.mismatched.setdefault(index, output.tokens)
        for output in decoded:
            if output.stats is not None:
                self.drafted += output.stats.drafted_tokens
                self.accepted += output.stats.accepted_tokens
                self.new_tokens += output.stats.new_tokens
                self.main_passes += output.stats.main_passes


def parse_batch_sizes(text: str) -> list[int]:
    try:
        sizes = list(dict.fromkeys(int(part) for part in text.split(",") if part.strip()))
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise BenchError(f"--batch-sizes takes positive integers such as 1,4,8,16, not '{text}'")
    return sorted(sizes)


def parse_systems(text: str) -> list[str]:
    chosen = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not chosen or any(key not in SYSTEMS for key in chosen):
        raise BenchError(f"--systems takes some of {','.join(SYSTEMS)}, not '{text}'")
    return [key for key in SYSTEMS if key in chosen]


def load_workload(folder: Path, utterances: int) -> Workload:
    from asr_specdec.errors import SpecdecError
    from asr_specdec.whisper.io.audio import load_audio

    manifest = folder / "manifest.jsonl"
    if not manifest.is_file():
        raise BenchError(f"no manifest.jsonl in {folder}")
    names = [json.loads(line)["audio"] for line in manifest.read_text().splitlines() if line.strip()]
    if not names:
        raise BenchError(f"{manifest} lists no clips")
    used = names[:utterances]
    try:
        clips = [load_audio(folder / name) for name in used]
    except SpecdecError as error:
        raise BenchError(str(error)) from None
    return Workload(used, clips, [index % len(used) for index in range(utterances)])


def decode_workload(system: System, utterances: list, batch_size: int) -> tuple[list, list[tuple[int, float]]]:
    """Every utterance decoded, `batch_size` at a time: (outputs in order, (rows, seconds) per batch)."""
    decoded, batch_walls = [], []
    for begin in range(0, len(utterances), batch_size):
        batch = utterances[begin:begin + batch_size]
        outputs, seconds = timed(system.decode, batch)
        batch_walls.append((len(batch), seconds))
        decoded += outputs
    return decoded, batch_walls


def reference_tokens(setup: Setup, workload: Workload) -> list[list[int]]:
    """Ours plain greedy at batch size 1, once per clip (untimed), per utterance."""
    from .systems import build_system

    plain = build_system("ours-plain", setup)
    per_clip = [plain.decode([clip])[0].tokens for clip in workload.clips]
    return [per_clip[index] for index in workload.order]


def model_spec(spec: str) -> str:
    """`spec` with a local directory made absolute, since the memory processes run from the repository root."""
    from asr_specdec.weights.packs import PACKS

    path = Path(spec).expanduser()
    return str(path.resolve()) if spec not in PACKS and path.exists() else spec


def build_cells(keys: list[str], setup: Setup, batch_sizes: list[int]) -> tuple[dict, dict]:
    """(key -> built System, (key, batch size) -> Cell); a system that cannot be built fails every cell."""
    from .systems import build_system

    systems, cells = {}, {}
    for key in keys:
        try:
            systems[key] = build_system(key, setup)
            label, reason = systems[key].label, ""
        except Exception as error:
            label, reason = SYSTEMS[key], one_line(error)
        for size in batch_sizes:
            cells[key, size] = Cell(key, label, size)
            if reason:
                cells[key, size].stop("failed", reason)
            elif refusal := systems[key].refusal(size):
                cells[key, size].stop("n/a", refusal)
    return systems, cells


def warm_up(systems: dict, cells: dict, workload: Workload, batch_sizes: list[int]) -> None:
    """One batch per system at its smallest runnable batch size: first calls pay one-off costs."""
    for key, system in systems.items():
        runnable = [size for size in batch_sizes if cells[key, size].status == "ok"]
        if not runnable:
            continue
        try:
            system.decode(workload.utterances[:runnable[0]])
        except Exception as error:
            for size in runnable:
                cells[key, size].stop("failed", f"in warm-up: {one_line(error)}")


def time_systems(systems: dict, cells: dict, workload: Workload, batch_sizes: list[int], repeats: int,
                 reference: list[list[int]]) -> None:
    """Each repeat runs every batch size, and within it every system, over the whole workload; a system that
    fails is reported in its cell, never a traceback that stops the bench."""
    utterances = workload.utterances
    runs = {(key, size): (lambda _, system=system, size=size: decode_workload(system, utterances, size))
            for size in batch_sizes for key, system in systems.items() if cells[key, size].status == "ok"}

    def record(cell_key, index, outcome, seconds):
        decoded, batch_walls = outcome
        cells[cell_key].record(decoded, batch_walls, reference)

    rounds = interleave(runs, [utterances], repeats, warm_up=False, each=record, catch=True)
    for cell_key, error in rounds.errors.items():
        cells[cell_key].stop("failed", error)


def measure_memory(cells: dict, setup: Setup, workload: Workload, scratch: Path) -> None:
    from .memory import measure_peak_rss, save_workload

    path = save_workload(workload.clips, workload.order, scratch / "workload.npz")
    for cell in cells.values():
        if cell.status != "ok":
            continue
        try:
            measured = measure_peak_rss(cell.key, cell.batch_size, setup, path)
            cell.peak_rss_mib, cell.vm_hwm_mib = measured["peak_rss_mib"], measured.get("vm_hwm_mib")
        except RuntimeError as error:
            cell.memory_reason = f"failed: {error}"


def result_rows(cells: dict, workload: Workload) -> list[dict]:
    plain = {size: cell for (key, size), cell in cells.items() if key == "ours-plain" and cell.walls}
    rows = []
    for cell in cells.values():
        row = {"system": cell.key, "label": cell.label, "batch_size": cell.batch_size, "status": cell.status,
               "reason": cell.reason, "utterances": len(workload.order), "audio_seconds": workload.audio_seconds}
        if cell.walls:
            wall = statistics.median(cell.walls)
            same, first = plain.get(cell.batch_size), plain.get(1)
            row.update(
                wall_seconds=wall, walls=cell.walls, latency_seconds=statistics.median(cell.latencies),
                throughput=workload.audio_seconds / wall,
                speedup_same_batch=statistics.median(same.walls) / wall if same else None,
                speedup_vs_batch_1=statistics.median(first.walls) / wall if first else None,
                acceptance_rate=cell.accepted / cell.drafted if cell.drafted else None,
                tokens_per_main_pass=cell.new_tokens / cell.main_passes if cell.drafted and cell.main_passes else None,
                mismatched_utterances=sorted(cell.mismatched),
                mismatched_tokens={str(index): tokens for index, tokens in sorted(cell.mismatched.items())})
        row.update(peak_rss_mib=cell.peak_rss_mib, vm_hwm_mib=cell.vm_hwm_mib, memory_reason=cell.memory_reason)
        rows.append(row)
    return rows


def memory_ratio(rows: list[dict]) -> dict | None:
    """Peak RSS of ours speculative over ours plain at the largest batch size where both were measured."""
    measured = {(row["system"], row["batch_size"]): row["peak_rss_mib"] for row in rows if row["peak_rss_mib"]}
    sizes = [size for (key, size) in measured if key == "ours-spec" and ("ours-plain", size) in measured]
    if not sizes:
        return None
    size = max(sizes)
    return {"batch_size": size, "ratio": measured["ours-spec", size] / measured["ours-plain", size]}


def notes(report: dict) -> list[str]:
    config, lines = report["config"], []
    lines.append(f"Workload: {config['utterances']} utterances cycled from {len(config['clips'])} shared clips, "
                 f"{config['audio_seconds']:.1f} s of audio; main model {config['main']}; {config['threads']} "
                 f"threads; {config['repeats']} repeat(s), median shown; warm-up first.")
    if (larger := [size for size in config["batch_sizes"] if size > config["utterances"]]):
        lines.append(f"Batch sizes {', '.join(map(str, larger))} exceed the {config['utterances']} utterances: "
                     "they ran one batch of all of them.")
    lines.append("Latency per utterance: the mean, over utterances, of the wall time of the batch that holds it. "
                 "Throughput: audio seconds per wall second over the whole workload.")
    if (sharing := report.get("assistant_pairing")) is not None:
        lines.append(f"transformers' assistant: {sharing['summary']}")
    if (ratio := report.get("memory_ratio")) is not None:
        verdict = "within" if ratio["ratio"] <= MEMORY_BOUND else "ABOVE"
        lines.append(f"Peak RSS ours speculative / ours plain at B={ratio['batch_size']}: {ratio['ratio']:.2f}x "
                     f"({verdict} the {MEMORY_BOUND}x bound).")
    if any(key.startswith("fw-") for key in config["systems"]):
        lines.append("faster-whisper computes its own log-mel features (it pads the features, not the audio), so its "
                     "parity column can say no because of the input, not the weights (see tests/weights/test_ct2.py).")
    return lines


def pairing_summary(check, assistant: str) -> dict:
    from .systems import ASSISTANT_INT8_SELF

    if assistant == ASSISTANT_INT8_SELF:
        summary = (f"int8 self (decoder-only WhisperForCausalLM with the main decoder's weights); per call the "
                   f"encoder ran {check.encoder_runs}x and the assistant received the main encoder output in all "
                   f"{check.assistant_steps} of its steps; tokens equal transformers' plain greedy on the check "
                   f"clip: {'yes' if check.equals_plain else 'NO'}.")
    else:
        why = check.error or "transformers did not share the main encoder output with it"
        summary = f"FALLBACK to the main model itself, because the int8 decoder-only self failed: {why}."
    return {"assistant": assistant, "summary": summary, "encoder_runs": check.encoder_runs,
            "assistant_steps": check.assistant_steps, "shared": check.shared, "equals_plain": check.equals_plain,
            "error": check.error}


def run(args) -> dict:
    from asr_specdec.errors import SpecdecError

    from .systems import pair_assistant

    progress = Progress()
    set_threads(args.threads)
    _quiet_transformers()
    setup = Setup(model_spec(args.main), args.threads)
    try:
        loaded = setup.main_model()
    except SpecdecError as error:
        raise BenchError(str(error)) from None
    workload = load_workload(Path(args.audio), args.utterances)
    progress(f"loaded {args.main}")
    progress("reference tokens: ours plain, batch size 1")
    reference = reference_tokens(setup, workload)
    report = {"config": config(args, workload, loaded)}
    with tempfile.TemporaryDirectory(prefix="asr_specdec-bench-") as scratch:
        if any(key.startswith("fw-") for key in args.systems):
            progress("assembling the CTranslate2 checkpoint")
            setup.ct2_dir, setup.ct2_missing = ct2_checkpoint(setup.main, Path(scratch))
        if "hf-assisted" in args.systems:
            progress("pairing transformers' assistant")
            check = pair_assistant(setup, workload.clips[0])
            report["assistant_pairing"] = pairing_summary(check, setup.assistant)
        progress("building the systems")
        systems, cells = build_cells(args.systems, setup, args.batch_sizes)
        progress("warm-up")
        warm_up(systems, cells, workload, args.batch_sizes)
        progress("timing")
        time_systems(systems, cells, workload, args.batch_sizes, args.repeats, reference)
        del systems
        if args.memory:
            progress("peak memory, one fresh process per system and batch size")
            measure_memory(cells, setup, workload, Path(scratch))
    progress("done")
    report["rows"] = result_rows(cells, workload)
    report["memory_ratio"] = memory_ratio(report["rows"])
    report["reference_tokens"] = reference
    return report


def config(args, workload: Workload, loaded) -> dict:
    return {"main": args.main, "main_sha256": loaded.sha256, "language": LANGUAGE, "batch_sizes": args.batch_sizes,
            "utterances": args.utterances, "repeats": args.repeats, "threads": args.threads,
            "systems": args.systems, "memory": args.memory, "clips": workload.clip_names,
            "audio_seconds": workload.audio_seconds, "versions": _versions(), "machine": platform.platform(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S")}


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in ("torch", "transformers", "ctranslate2", "faster-whisper"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    return found


def _quiet_transformers() -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()  # its generate() deprecation notes would bury the table


def write_outputs(report: dict, output: Path) -> list[str]:
    """Writes bench.json, bench.md, bench.png; returns the Markdown lines."""
    from .report import markdown_table, write_plot

    output.mkdir(parents=True, exist_ok=True)
    lines = markdown_table(report["rows"]) + [""] + notes(report)
    (output / "bench.json").write_text(json.dumps(report, indent=1) + "\n")
    (output / "bench.md").write_text("# The duel\n\n" + "\n".join(lines) + "\n")
    write_plot(report["rows"], output / "bench.png")
    return lines


def parse_args(argv):
    parser = bench_parser(__doc__, "eval.bench.duel", OneLineParser)
    add_common_flags(parser, main_help="main model: pack name or CTranslate2 dir (faster-whisper needs one), or a "
                                       "transformers dir",
                     threads=None, threads_help="torch and CTranslate2 threads (default: torch's choice)")
    parser.add_argument("--batch-sizes", default=",".join(map(str, DEFAULT_BATCH_SIZES)))
    parser.add_argument("--utterances", type=int, default=16, help="shared clips cycled to this many utterances")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"some of {','.join(SYSTEMS)}")
    parser.add_argument("--no-memory", dest="memory", action="store_false",
                        help="skip the peak-memory processes")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help=f"folder for the outputs (default {DEFAULT_OUTPUT})")
    args = parser.parse_args(argv)
    args.batch_sizes, args.systems = parse_batch_sizes(args.batch_sizes), parse_systems(args.systems)
    for name in ("utterances", "repeats", "threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise BenchError(f"--{name} must be at least 1, got {value}")
    if args.threads is None:
        import torch

        args.threads = torch.get_num_threads()
    return args


def main(argv=None) -> int:
    try:
        args = parse_args(argv)
        report = run(args)
        lines = write_outputs(report, Path(args.output))
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    print(f"\nwrote {Path(args.output) / 'bench.json'}, bench.md and bench.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
