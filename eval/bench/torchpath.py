"""The PyTorch decoding path (ASR_SPECDEC_NATIVE=0: every CPU without the native kernels, and a GPU) of two
checkouts, interleaved in one run: the shared clips with a pack (default `base`), the default mode and plain.

    python -m eval.bench.torchpath --before /path/to/old/checkout [--after .] [--main base] [--repeats 2]
                                   [--threads 2] [--modes default,off] [--clips 12]

Each checkout runs in its own worker process (its own `asr_specdec` first on sys.path, ASR_SPECDEC_NATIVE=0,
the same thread count), both loaded before timing starts and warmed up on one clip. The workers then take turns
clip by clip and mode by mode (which one goes first alternates), so that load from other processes on the machine
falls on both alike; each clip's time is the minimum over the repeats, from samples to tokens. The table gives the
total per (checkout, mode), the after/before ratio, and whether each mode's tokens equal plain's and the other
checkout's (they should: the same weights and compute type).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

WORKER_FLAG = "--worker"


def worker(root: str, main: str, modes: list[str], threads: int) -> None:
    """Serve requests on stdin ("CLIP MODE" lines) with `root`'s asr_specdec, one JSON answer per line."""
    sys.path.insert(0, root)
    import torch

    torch.set_num_threads(threads)
    import asr_specdec
    from asr_specdec.weights.whisper_models import resolve_model_dir
    from asr_specdec.whisper import SpeculativeWhisper
    from asr_specdec.whisper.io.audio import load_audio
    from asr_specdec.whisper.runtime.lean_model import load_lean_whisper
    from asr_specdec.whisper.runtime.lean_processor import load_lean_processor

    from .harness import timed

    location = resolve_model_dir(main)
    loaded = (load_lean_whisper(location), load_lean_processor(location))
    systems = {mode: SpeculativeWhisper(loaded, language="en", **({} if mode == "default" else {"mode": mode}))
               for mode in modes}
    audio_cache: dict[str, object] = {}
    print(json.dumps({"ready": asr_specdec.__file__,
                      "modes": {name: system.mode for name, system in systems.items()}}), flush=True)
    for line in sys.stdin:
        clip, mode = line.rstrip("\n").rsplit(" ", 1)
        if clip not in audio_cache:
            audio_cache[clip] = load_audio(clip)
        result, seconds = timed(systems[mode].transcribe, audio_cache[clip])
        print(json.dumps({"seconds": seconds, "tokens": list(result.tokens), "text": result.text}), flush=True)


class Worker:
    def __init__(self, root: Path, main: str, modes: list[str], threads: int):
        env = dict(os.environ, ASR_SPECDEC_NATIVE="0", OMP_NUM_THREADS=str(threads))
        here = Path(__file__).resolve().parents[2]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "eval.bench.torchpath", WORKER_FLAG, str(root), main, ",".join(modes),
             str(threads)], cwd=here, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        hello = self._answer()
        expected = root / "asr_specdec" / "__init__.py"
        if Path(hello["ready"]).resolve() != expected.resolve():
            raise SystemExit(f"worker for {root} imported {hello['ready']}, not {expected}")
        self.modes = hello["modes"]

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"a worker stopped (exit {self.process.wait()})")
        return json.loads(line)

    def run(self, clip: Path, mode: str) -> dict:
        self.process.stdin.write(f"{clip} {mode}\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == WORKER_FLAG:
        root, model, modes, threads = argv[1:5]
        worker(root, model, modes.split(","), int(threads))
        return
    from .cli import bench_parser
    from .harness import add_common_flags, manifest_clips

    parser = bench_parser(__doc__, "eval.bench.torchpath")
    parser.add_argument("--before", type=Path, required=True, help="the checkout to compare against (its root)")
    parser.add_argument("--after", type=Path, default=Path(__file__).resolve().parents[2])
    add_common_flags(parser, repeats=2, threads=2)
    parser.add_argument("--modes", default="default,off")
    parser.add_argument("--clips", type=int, default=0, help="the first N shared clips only (0: all)")
    options = parser.parse_args(argv)
    for root in (options.before, options.after):
        if not (root / "asr_specdec" / "__init__.py").is_file():
            parser.error(f"{root} is not a checkout of this project (no asr_specdec/__init__.py)")
    modes = options.modes.split(",")
    clips = manifest_clips(Path(options.audio))
    clips = clips[: options.clips] if options.clips else clips
    workers = {name: Worker(root.resolve(), options.main, modes, options.threads)
               for name, root in (("before", options.before), ("after", options.after))}
    for name, running in workers.items():
        print(f"{name}: {getattr(options, name)} (modes: {running.modes})", flush=True)
    for running in workers.values():
        for mode in modes:
            running.run(clips[0], mode)  # warm-up
    best: dict[tuple[str, str], list[float]] = {(name, mode): [float("inf")] * len(clips)
                                               for name in workers for mode in modes}
    tokens: dict[tuple[str, str], list] = {key: [None] * len(clips) for key in best}
    turn = 0
    for repeat in range(options.repeats):
        for index, clip in enumerate(clips):
            for mode in modes:
                order = list(workers) if turn % 2 == 0 else list(workers)[::-1]
                turn += 1
                for name in order:
                    answer = workers[name].run(clip, mode)
                    best[name, mode][index] = min(best[name, mode][index], answer["seconds"])
                    tokens[name, mode][index] = answer["tokens"]
        print(f"repeat {repeat + 1}/{options.repeats} done", flush=True)
    for running in workers.values():
        running.close()
    plain = "off" if "off" in modes else modes[0]
    print(f"\n{len(clips)} shared clips, {options.main}, ASR_SPECDEC_NATIVE=0, {options.threads} threads, "
          f"best of {options.repeats} per clip, interleaved\n")
    print("| mode | before s | after s | after/before | tokens == plain (after) | tokens == before |")
    print("|---|---|---|---|---|---|")
    for mode in modes:
        before, after = sum(best["before", mode]), sum(best["after", mode])
        same_plain = sum(a == b for a, b in zip(tokens["after", mode], tokens["after", plain]))
        same_before = sum(a == b for a, b in zip(tokens["after", mode], tokens["before", mode]))
        print(f"| {mode} ({workers['after'].modes[mode]}) | {before:.2f} | {after:.2f} | {after / before:.3f} | "
              f"{same_plain}/{len(clips)} | {same_before}/{len(clips)} |")


if __name__ == "__main__":
    main()
