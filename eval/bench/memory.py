"""Peak memory of one system at one batch size, each measured in a fresh process so that no other system's
models or allocations count: the process builds the system, decodes the whole workload once and reports
its peak resident set size (getrusage's ru_maxrss, and /proc's VmHWM as a cross-check).

Linux carries a process's high-water mark across fork and exec: a child started straight from the bench, which
holds every model, would report the bench's own peak as its ru_maxrss. So the probe is started by a small
launcher process, whose own peak (~15 MiB) is all its child inherits.

    python -m eval.bench.memory '{"system": "ours-spec", "batch_size": 16, "workload": "w.npz", ...}'

prints one JSON line, {"peak_rss_mib": ...} or {"error": ...}. eval.bench.duel runs it; it is not for people.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np

from ..paths import PROJECT_ROOT
from .harness import one_line, set_threads
from .systems import Setup, build_system

PROBE_TIMEOUT_SECONDS = 3600
LAUNCHER = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"


def peak_beside_children(own_peak: int, resident_before: int, first_load: bool = True) -> tuple[int, int]:
    """(the peak of this process and the children it waited for, the children's own peak), in bytes. A first load
    converts a CTranslate2 folder in a child process (asr_specdec/weights/conversion_process.py) while this one waits
    holding about what it held before it began loading (`resident_before`); this process's peak alone would leave the
    conversion out. A child's ru_maxrss is at least this process's peak when it was started (Linux carries the
    high-water mark across fork and exec), so this errs high, never low; any child counts (a warm load's only one,
    `gcc --version`, reads as this process's peak), so a load that is not `first_load` gives (`own_peak`, 0)."""
    if not first_load:
        return own_peak, 0
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
    return max(own_peak, resident_before + children if children else 0), children


def save_workload(clips: list[np.ndarray], order: list[int], path: Path) -> Path:
    """The workload's audio as one .npz (each clip once, plus the utterance order), read by every probe."""
    np.savez(path, order=np.asarray(order), **{f"clip{index}": clip for index, clip in enumerate(clips)})
    return path


def load_workload(path: Path) -> list[np.ndarray]:
    with np.load(path) as data:
        return [data[f"clip{index}"] for index in data["order"]]


def probe_config(key: str, batch_size: int, setup: Setup, workload: Path) -> dict:
    return {"system": key, "batch_size": batch_size, "workload": str(workload), "main": setup.main,
            "threads": setup.threads, "ct2_dir": str(setup.ct2_dir) if setup.ct2_dir else None,
            "ct2_missing": setup.ct2_missing, "assistant": setup.assistant}


def measure_peak_rss(key: str, batch_size: int, setup: Setup, workload: Path) -> dict:
    """{"peak_rss_mib": ru_maxrss, "vm_hwm_mib": VmHWM or None} in MiB of a fresh process running system `key`
    at `batch_size`; raises RuntimeError with the probe's one-line reason when it fails."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                                            os.environ.get("PYTHONPATH")])))
    config = json.dumps(probe_config(key, batch_size, setup, workload))
    try:
        completed = subprocess.run([sys.executable, "-c", LAUNCHER, sys.executable, "-m", "eval.bench.memory", config],
                                   capture_output=True, text=True, env=environment, cwd=PROJECT_ROOT,
                                   timeout=PROBE_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"memory probe ran past {PROBE_TIMEOUT_SECONDS} s") from None
    lines = completed.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"memory probe exited {completed.returncode}: {tail[:200]}") from None
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return answer


def run_probe(config: dict) -> dict:
    setup = Setup(config["main"], config["threads"], Path(config["ct2_dir"]) if config["ct2_dir"] else None,
                  config["ct2_missing"], config["assistant"])
    if not config["system"].startswith("fw-"):  # faster-whisper's process never imports torch
        set_threads(setup.threads)
    system = build_system(config["system"], setup)
    utterances, batch_size = load_workload(Path(config["workload"])), config["batch_size"]
    for begin in range(0, len(utterances), batch_size):
        system.decode(utterances[begin:begin + batch_size])
    return {"peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),  # KiB on Linux
            "vm_hwm_mib": _vm_hwm_mib()}


def _vm_hwm_mib() -> float | None:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    line = next((line for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return round(int(line.split()[1]) / 1024, 1) if line else None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        print(json.dumps(run_probe(json.loads(argv[0]))))
    except Exception as error:  # the bench reports it in its table
        print(json.dumps({"error": one_line(error)}))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
