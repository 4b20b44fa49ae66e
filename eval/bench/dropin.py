"""The drop-in duel: `asr_specdec.WhisperModel` against `faster_whisper.WhisperModel` (int8 and float32), both
called as a faster-whisper user calls them, `model.transcribe(samples)` with every default (beam 5, timestamps on,
language detected, the temperature ladder, previous-text conditioning), on the shared clips one at a time and on
the 64-s long file, the systems taking turns, the same CTranslate2 weights and threads. The drop-in runs twice:
with its default compute type and with compute_type="int8", faster-whisper's int8 beside it.

    python -m eval.bench.dropin [--main base] [--threads 2] [--repeats 2] [--limit N]

Each clip's time is the minimum over the repeats, from samples in memory to the last segment read (the segment
generators are lazy on both sides). WER is on the clips with a reference (jiwer after transformers' Whisper
English normaliser, eval/metrics.py).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from .cli import bench_parser
from .harness import (
    ClipTally,
    add_common_flags,
    clip_table,
    ct2_checkpoint,
    faster_whisper,
    interleave,
    joined_clips,
    load_clips,
    manifest_clips,
    set_threads,
)


def defaults_text(model, samples: np.ndarray) -> tuple[str, list[int], int, int]:
    """Every transcribe default of faster-whisper's API; (text, tokens, drafted, accepted) as speed's tables read."""
    segments, _ = model.transcribe(samples)
    segments = list(segments)
    return "".join(segment.text for segment in segments).strip(), [t for s in segments for t in s.tokens], 0, 0


def systems(main: str, threads: int, scratch: Path) -> dict:
    from asr_specdec import WhisperModel

    ct2_dir, missing = ct2_checkpoint(main, scratch)
    if ct2_dir is None:
        raise SystemExit(f"error: {missing}")
    return {"asr_specdec.WhisperModel, defaults": WhisperModel(main, cpu_threads=threads),
            "asr_specdec.WhisperModel, int8": WhisperModel(main, cpu_threads=threads, compute_type="int8"),
            **{f"faster-whisper {kind}": faster_whisper(ct2_dir, kind, threads) for kind in ("float32", "int8")}}


def duel(models: dict, clips: list[Path], long_audio: np.ndarray, repeats: int) -> list[str]:
    audio = load_clips(clips)
    runs = {name: (lambda samples, model=model: defaults_text(model, samples)) for name, model in models.items()}
    rounds = interleave(runs, audio, repeats)
    tallies = {name: ClipTally(seconds=rounds.per_item(name)) for name in models}
    for name, tally in tallies.items():
        for text, tokens, _, _ in rounds.results[name]:
            tally.texts.append(text)
            tally.tokens.append(tokens)
    long_rounds = interleave(runs, [long_audio], repeats, warm_up=False)
    long_seconds = {name: long_rounds.total(name) for name in models}
    long_texts = {name: long_rounds.results[name][0][0] for name in models}
    reference = long_seconds["faster-whisper int8"]
    lines = [f"**{len(clips)} shared clips, one at a time**", "", *clip_table(tallies, clips), "",
             f"**the long file** ({len(long_audio) / 16000:.1f} s)", "",
             "| system | seconds | vs faster-whisper int8 | text = faster-whisper int8's |", "|---|---|---|---|"]
    for name, seconds in long_seconds.items():
        same = "yes" if long_texts[name] == long_texts["faster-whisper int8"] else "no"
        lines.append(f"| {name} | {seconds:.2f} | {reference / seconds:.2f}x | {same} |")
    return lines


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.dropin")
    add_common_flags(parser, repeats=2)
    parser.add_argument("--limit", type=int, default=0, help="first N clips only")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    clips = manifest_clips(Path(args.audio))[: args.limit or None]
    with tempfile.TemporaryDirectory() as scratch:
        models = systems(args.main, args.threads, Path(scratch))
        print(f"# drop-in duel, {args.main}, {args.threads} threads, transcribe() defaults (beam 5, timestamps, "
              f"language detection, temperature ladder), best of {args.repeats}\n")
        print("\n".join(duel(models, clips, joined_clips(Path(args.audio)), args.repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
