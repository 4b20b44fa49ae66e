"""Memory of loading a CTranslate2 Whisper folder and running one call on it, ours beside faster-whisper int8.

Each measurement runs in a fresh process (started by a small launcher, so that the bench's own high-water mark
is not inherited): it loads the folder through the drop-in `WhisperModel`, reads /proc/self/status (VmHWM: the
load's peak; VmRSS: resident after the load), transcribes 30 s of audio greedily (a fixed token budget), and
reads VmRSS and VmHWM again (end of text is suppressed, so a call on random weights decodes its whole
token budget). Ours is measured twice per compute type: the first load, into an empty cache (it
converts the folder and packs its weights), then a warm load from that cache; the cache's size on disk is
reported beside.

    python -m eval.bench.load_memory ~/.cache/asr_specdec/size-models/small [more folders] \
        [--systems ours-int8,ours-default,fw-int8] [--threads 2] [--tokens 100]

prints a table in MB (10^6 bytes) and, with --json, one JSON line per measurement. Run it under
`flock /work/brief/bigmem.lock` for large folders on a shared machine: a first load of large-v3 holds GBs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..paths import PROJECT_ROOT

LAUNCHER = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
SYSTEMS = {"ours-int8": "int8", "ours-default": "default", "fw-int8": "int8"}
SAMPLE_RATE, SECONDS = 16000, 30


def _status() -> dict[str, int]:
    """VmHWM and VmRSS of this process, in bytes."""
    values = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            values[name] = int(rest.split()[0]) * 1024
    return values


def _audio():
    import numpy as np

    rng = np.random.default_rng(0)
    time = np.arange(SAMPLE_RATE * SECONDS) / SAMPLE_RATE
    return (0.1 * np.sin(2 * np.pi * 220 * time) + 0.05 * rng.standard_normal(time.size)).astype(np.float32)


def probe(config: dict) -> dict:
    """Runs in the measured process: load, one call, the numbers (a first load's peak counts its conversion process:
    memory.py `peak_beside_children`)."""
    from .memory import peak_beside_children

    if config["system"].startswith("fw-"):
        from faster_whisper import WhisperModel
    else:
        import torch

        torch.set_num_threads(config["threads"])
        from asr_specdec.compat import WhisperModel
    audio = _audio()
    tokenizer = json.loads((Path(config["folder"]) / "tokenizer.json").read_text())
    end_of_text = next(token["id"] for token in tokenizer["added_tokens"] if token["content"] == "<|endoftext|>")
    before = _status()["VmRSS"]
    model = WhisperModel(config["folder"], device="cpu", compute_type=SYSTEMS[config["system"]],
                         cpu_threads=config["threads"])
    loaded = _status()
    load_peak, conversion_peak = peak_beside_children(loaded["VmHWM"], before, config.get("first_load", False))
    segments, _ = model.transcribe(audio, beam_size=1, temperature=0, without_timestamps=True, language="en",
                                   condition_on_previous_text=False, vad_filter=False, no_speech_threshold=None,
                                   max_new_tokens=config["tokens"], suppress_tokens=[-1, end_of_text])
    tokens = sum(len(segment.tokens) for segment in segments)
    called = _status()
    return {"load_peak": load_peak, "conversion_peak": conversion_peak, "after_load": loaded["VmRSS"],
            "after_call": called["VmRSS"], "peak": max(called["VmHWM"], load_peak), "tokens": tokens}


def kernels_cache() -> Path:
    """The user's own cache, with the native kernels compiled there (once): each fresh cache gets a copy instead
    of compiling them again (which on a busy machine can outlast the build's time limit)."""
    from asr_specdec.weights.cache import cache_root

    subprocess.run([sys.executable, "-c", "from asr_specdec.native import capabilities; capabilities()"],
                   cwd=PROJECT_ROOT, check=True)
    return cache_root()


def fresh_cache(kernels: Path) -> Path:
    cache = Path(tempfile.mkdtemp(prefix="load-memory-"))
    if (kernels / "native").is_dir():
        shutil.copytree(kernels / "native", cache / "native")
    return cache


def measure(system: str, folder: Path, cache: Path, threads: int, tokens: int, first_load: bool = False) -> dict:
    """probe() in a fresh process with `cache` as the package's cache; raises RuntimeError with its last line."""
    config = json.dumps({"system": system, "folder": str(folder), "threads": threads, "tokens": tokens,
                         "first_load": first_load})
    environment = dict(os.environ, ASR_SPECDEC_CACHE=str(cache),
                       PYTHONPATH=os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")])))
    completed = subprocess.run([sys.executable, "-c", LAUNCHER, sys.executable, "-m", "eval.bench.load_memory",
                                "--probe", config], capture_output=True, text=True, env=environment,
                               cwd=PROJECT_ROOT)
    lines = completed.stdout.strip().splitlines()
    if completed.returncode != 0 or not lines:
        tail = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{system} on {folder.name} exited {completed.returncode}: {tail[:300]}")
    return json.loads(lines[-1])


def disk_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def rows(folder: Path, systems: list[str], threads: int, tokens: int, kernels: Path):
    """(system, phase, numbers) for each system on `folder`; ours first into a cache holding only the compiled
    kernels, then warm from it."""
    for system in systems:
        if system.startswith("fw-"):
            with tempfile.TemporaryDirectory(prefix="load-memory-") as cache:
                yield system, "load", measure(system, folder, Path(cache), threads, tokens)
            continue
        cache = fresh_cache(kernels)
        try:
            first = measure(system, folder, cache, threads, tokens, first_load=True)
            first["cache_disk"] = disk_bytes(cache) - disk_bytes(cache / "native")
            yield system, "first load", first
            yield system, "warm load", measure(system, folder, cache, threads, tokens)
        finally:
            shutil.rmtree(cache, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.bench.load_memory", description=__doc__.split("\n")[0])
    parser.add_argument("folders", nargs="*", type=Path, help="CTranslate2 Whisper folders")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, of {', '.join(SYSTEMS)}")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=100, help="the call's max_new_tokens")
    parser.add_argument("--json", action="store_true", help="also print one JSON line per measurement")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.probe:
        print(json.dumps(probe(json.loads(arguments.probe))))
        return 0
    systems = [name for name in arguments.systems.split(",") if name]
    if unknown := [name for name in systems if name not in SYSTEMS]:
        print(f"unknown system {unknown[0]}: use {', '.join(SYSTEMS)}", file=sys.stderr)
        return 2
    if missing := [str(folder) for folder in arguments.folders if not (folder / "model.bin").is_file()]:
        print(f"not a CTranslate2 folder (no model.bin): {missing[0]}", file=sys.stderr)
        return 2
    print("| folder | system | phase | load peak MB | conversion process peak MB | after load MB | after call MB | "
          "peak MB | tokens | cache on disk MB |")
    print("|---|---|---|---|---|---|---|---|---|---|", flush=True)
    kernels = kernels_cache()
    for folder in arguments.folders:
        table(folder.expanduser(), systems, arguments, kernels)
    return 0


def table(folder: Path, systems: list[str], arguments, kernels: Path) -> None:
    megabytes = lambda value: f"{value / 1e6:,.0f}"  # noqa: E731
    for system, phase, numbers in rows(folder, systems, arguments.threads, arguments.tokens, kernels):
        disk = megabytes(numbers["cache_disk"]) if "cache_disk" in numbers else ""
        conversion = megabytes(numbers["conversion_peak"]) if numbers.get("conversion_peak") else ""
        print(f"| {folder.name} | {system} | {phase} | {megabytes(numbers['load_peak'])} | {conversion} | "
              f"{megabytes(numbers['after_load'])} | {megabytes(numbers['after_call'])} | "
              f"{megabytes(numbers['peak'])} | {numbers['tokens']} | {disk} |", flush=True)
        if arguments.json:
            print(json.dumps({"folder": str(folder), "system": system, "phase": phase, **numbers}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
