"""An hour of silence through the command line: sox-style dithered silence (a quarter of the samples +-1 LSB,
what `sox -n -b 16 x.wav synth 3600 sine 1000 vol 0` writes) against all-zero samples, run alternately.

    python -m eval.bench.silence [--minutes 60] [--repeats 1] [--main base]

A window whose no-speech probability is above the silence threshold is not decoded (recipe/fallback.py), so the
dithered hour should cost about what the zeros cost (target: under 2x). Prints each run's wall time, the
ratio of the sums and the text each produced (empty expected)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

from .cli import bench_parser
from .harness import add_common_flags, interleave


class CommandFailed(Exception):
    """The transcribe command exited non-zero: the benchmark stops and says why."""


def silence_file(path: Path, seconds: float, dithered: bool) -> Path:
    samples = np.zeros(int(seconds * 16000), dtype=np.int16)
    if dithered:
        generator = np.random.default_rng(0)
        flipped = generator.random(len(samples)) < 0.25
        samples[flipped] = generator.choice(np.array([-1, 1], dtype=np.int16), int(flipped.sum()))
    soundfile.write(path, samples, 16000, subtype="PCM_16")
    return path


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.silence")
    parser.add_argument("--minutes", type=float, default=60.0)
    add_common_flags(parser, audio=False, threads=False)  # the transcribe command takes torch's own threads
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        files = {name: silence_file(Path(scratch) / f"{name}.wav", args.minutes * 60, name == "dithered")
                 for name in ("zeros", "dithered")}
        runs = {name: (lambda _, path=path: subprocess.run(
            [sys.executable, "-m", "asr_specdec.transcribe", str(path), "--main", args.main],
            capture_output=True, text=True)) for name, path in files.items()}
        def check(name, index, done, seconds):
            if done.returncode != 0:
                raise CommandFailed(f"{name}: exit {done.returncode}: {done.stderr.strip()[-300:]}")

        try:  # a fresh process each run: nothing to warm up
            rounds = interleave(runs, [None], args.repeats, warm_up=False, each=check)
        except CommandFailed as failure:
            print(failure)
            return 1
        seconds = {name: rounds.seconds[name][0] for name in runs}
        texts = {name: rounds.results[name][0].stdout.strip() for name in runs}
    ratio = sum(seconds["dithered"]) / sum(seconds["zeros"])
    print(f"{args.minutes:g} min of silence, {args.main}, CLI defaults: " + "; ".join(
        f"{name} {' / '.join(f'{value:.1f}' for value in values)} s, text {texts[name]!r}"
        for name, values in seconds.items()) + f"; dithered / zeros {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
