"""Long-audio benchmark: plain vs speculative sequential long-form decoding (30-s windows with timestamps) on
one file made of every shared clip with 0.5 s of silence after each (64 s), interleaved run by run.

    python -m eval.bench.longform [--main base,tiny.en] [--mode quantized-self] [--repeats 2] [--threads 2]

Prints one line per model: both times per run, the speedup (ratio of summed times), acceptance, main passes
and whether the segments (start, end, text) are identical.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .cli import bench_parser
from .harness import add_common_flags, interleave, joined_clips, load_main, own_clock, set_threads, transcriber


def measure(model_name: str, mode: str, audio: np.ndarray, repeats: int) -> str:
    loaded = load_main(model_name)
    # an English-only model is given no language (its default, None), a multilingual one English
    language = "en" if loaded.model.generation_config.is_multilingual else None
    transcribers = {name: transcriber(loaded, name, language=language) for name in ("off", mode)}
    for whisper in transcribers.values():  # warm-up: first calls pay one-off allocation costs
        whisper.transcribe(audio[: 5 * 16000])
    rounds = interleave({name: whisper.transcribe for name, whisper in transcribers.items()}, [audio], repeats,
                        warm_up=False, seconds_of=own_clock)
    seconds = {name: rounds.seconds[name][0] for name in transcribers}
    results = {name: rounds.results[name][0] for name in transcribers}
    segments = {name: [(s.start, s.end, s.text) for s in result.segments] for name, result in results.items()}
    stats = results[mode].stats
    times = ", ".join(f"{name} {' / '.join(f'{t:.2f}' for t in values)} s" for name, values in seconds.items())
    return (f"{model_name}: {times}; speedup {sum(seconds['off']) / sum(seconds[mode]):.2f}x; acceptance "
            f"{stats.acceptance_rate:.2f}; {stats.main_passes} main passes for {stats.new_tokens} tokens; "
            f"{len(segments['off'])} segments, identical: {'yes' if segments['off'] == segments[mode] else 'NO'}")


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.longform")
    add_common_flags(parser, main="base,tiny.en", main_help="main models, comma-separated", repeats=2)
    parser.add_argument("--mode", default="quantized-self")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    audio = joined_clips(Path(args.audio))
    print(f"{len(audio) / 16000:.1f} s of audio, {args.threads} threads, mode {args.mode}, {args.repeats} runs each")
    for model_name in args.main.split(","):
        print(measure(model_name, args.mode, audio, args.repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
