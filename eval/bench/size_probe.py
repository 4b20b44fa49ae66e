"""Memory of one system on one size model, in a fresh process: the peak resident set while it loads (with its
conversion process beside it on a first load: memory.py `peak_beside_children`), the resident set after one whole
30-s call, and the peak over both. `"fresh_cache": true` loads with an empty model cache (the
native kernels kept), so ours converts the CTranslate2 folder as on its first load.

    python -m eval.bench.size_probe '{"system": "ours", "compute_type": "int8", "folder": "...", ...}'

prints one JSON line (MiB), or {"error": ...}. eval.bench.sizes runs it through memory.py's launcher (a child
started straight from the bench would inherit the bench's own high-water mark); it is not for people.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..paths import PROJECT_ROOT
from .memory import LAUNCHER, PROBE_TIMEOUT_SECONDS, peak_beside_children
from .systems import one_line


def _status_mib(field: str) -> float:
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith(field + ":"))
    return round(int(line.split()[1]) / 1024, 1)


def run_probe(config: dict) -> dict:
    import numpy as np

    from .sizes import build_system, forced_call

    samples = np.load(config["audio"])
    before = _status_mib("VmRSS")
    system = build_system(config["system"], config["folder"], config["compute_type"], config.get("mode"),
                          config["threads"])
    load_peak, conversion_peak = peak_beside_children(round(_status_mib("VmHWM") * 2**20), round(before * 2**20),
                                                      config.get("fresh_cache", False))
    forced_call(system, samples, config["tokens"], config["end_of_text"])
    load_peak_mib = round(load_peak / 2**20, 1)
    return {"load_peak_mib": load_peak_mib, "conversion_peak_mib": round(conversion_peak / 2**20, 1),
            "rss_after_call_mib": _status_mib("VmRSS"), "peak_mib": max(_status_mib("VmHWM"), load_peak_mib)}


def measure(config: dict) -> dict:
    """run_probe's answer from a fresh process; {"error": why} when it fails."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                                            os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory(prefix="asr_specdec-first-load-") as scratch:
        if config.get("fresh_cache"):
            from asr_specdec.weights.cache import cache_root

            (Path(scratch) / "native").symlink_to(cache_root() / "native")  # no kernel rebuild in the measurement
            environment["ASR_SPECDEC_CACHE"] = scratch
        command = [sys.executable, "-c", LAUNCHER, sys.executable, "-m", "eval.bench.size_probe", json.dumps(config)]
        try:
            completed = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=PROJECT_ROOT,
                                       timeout=PROBE_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            return {"error": f"memory probe ran past {PROBE_TIMEOUT_SECONDS} s"}
    try:
        return json.loads(completed.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"memory probe exited {completed.returncode}: {tail[:200]}"}


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
