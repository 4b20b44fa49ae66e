"""Long-audio benchmark: plain vs speculative sequential long-form decoding (30-s windows with timestamps) on
one file made of every shared clip with 0.5 s of silence after each (64 s), interleaved run by run.

    python -m eval.bench.longform [--models base,tiny.en] [--mode quantized-self] [--repeats 2] [--threads 2]

Prints one line per model: both times per run, the speedup (ratio of summed times), acceptance, main passes
and whether the segments (start, end, text) are identical.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from ..paths import SHARED_AUDIO
from .cli import bench_parser

GAP_SECONDS = 0.5


def joined_clips(folder: Path, gap_seconds: float = GAP_SECONDS) -> np.ndarray:
    from asr_specdec.whisper.io.audio import SAMPLE_RATE, load_audio

    gap = np.zeros(int(SAMPLE_RATE * gap_seconds), dtype=np.float32)
    entries = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines() if line.strip()]
    return np.concatenate([part for entry in entries for part in (load_audio(folder / entry["audio"]), gap)])


def measure(model_name: str, mode: str, audio: np.ndarray, repeats: int) -> str:
    from asr_specdec.weights.whisper_models import load_whisper
    from asr_specdec.whisper import SpeculativeWhisper

    loaded = load_whisper(model_name)
    language = {"language": "en"} if loaded.model.generation_config.is_multilingual else {}
    transcribers = {name: SpeculativeWhisper(loaded, mode=name, **language) for name in ("off", mode)}
    for transcriber in transcribers.values():  # warm-up: first calls pay one-off allocation costs
        transcriber.transcribe(audio[: 5 * 16000])
    seconds = {name: [] for name in transcribers}
    results = {}
    for _ in range(repeats):
        for name, transcriber in transcribers.items():
            results[name] = transcriber.transcribe(audio)
            seconds[name].append(results[name].stats.total_seconds)
    segments = {name: [(s.start, s.end, s.text) for s in result.segments] for name, result in results.items()}
    stats = results[mode].stats
    times = ", ".join(f"{name} {' / '.join(f'{t:.2f}' for t in values)} s" for name, values in seconds.items())
    return (f"{model_name}: {times}; speedup {sum(seconds['off']) / sum(seconds[mode]):.2f}x; acceptance "
            f"{stats.acceptance_rate:.2f}; {stats.main_passes} main passes for {stats.new_tokens} tokens; "
            f"{len(segments['off'])} segments, identical: {'yes' if segments['off'] == segments[mode] else 'NO'}")


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.longform")
    parser.add_argument("--main", default="base,tiny.en", help="main models, comma-separated")
    parser.add_argument("--mode", default="quantized-self")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--audio", default=str(SHARED_AUDIO), help="folder with manifest.jsonl")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    audio = joined_clips(Path(args.audio))
    print(f"{len(audio) / 16000:.1f} s of audio, {args.threads} threads, mode {args.mode}, {args.repeats} runs each")
    for model_name in args.main.split(","):
        print(measure(model_name, args.mode, audio, args.repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
