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
import torch

from ..paths import SHARED_AUDIO
from .cli import bench_parser
from .drafters import manifest_clips
from .longform import joined_clips
from .speed import Tally, best_of, table


def defaults_text(model, samples: np.ndarray) -> tuple[str, list[int], int, int]:
    """Every transcribe default of faster-whisper's API; (text, tokens, drafted, accepted) as speed's tables read."""
    segments, _ = model.transcribe(samples)
    segments = list(segments)
    return "".join(segment.text for segment in segments).strip(), [t for s in segments for t in s.tokens], 0, 0


def systems(main: str, threads: int, scratch: Path) -> dict:
    from faster_whisper import WhisperModel as FasterWhisperModel

    from asr_specdec import WhisperModel
    from asr_specdec.weights.packs import assemble_pack

    ct2_dir = scratch / "ct2"
    ct2_dir.mkdir()
    assemble_pack(main, ct2_dir)
    return {"asr_specdec.WhisperModel, defaults": WhisperModel(main, cpu_threads=threads),
            "asr_specdec.WhisperModel, int8": WhisperModel(main, cpu_threads=threads, compute_type="int8"),
            **{f"faster-whisper {kind}": FasterWhisperModel(str(ct2_dir), device="cpu", compute_type=kind,
                                                             cpu_threads=threads, num_workers=1)
               for kind in ("float32", "int8")}}


def duel(models: dict, clips: list[Path], long_audio: np.ndarray, repeats: int) -> list[str]:
    from asr_specdec.whisper.io.audio import load_audio

    audio = [load_audio(clip) for clip in clips]
    tallies = {name: Tally() for name in models}
    for model in models.values():  # warm-up
        defaults_text(model, audio[0])
    for samples in audio:
        for name, model in models.items():
            seconds, (text, tokens, _, _) = best_of(lambda model=model, samples=samples: defaults_text(model, samples),
                                                    repeats)
            tallies[name].seconds.append(seconds)
            tallies[name].texts.append(text)
            tallies[name].tokens.append(tokens)
    long_seconds = {name: float("inf") for name in models}
    long_texts = {}
    for _ in range(repeats):
        for name, model in models.items():
            seconds, (long_texts[name], *_) = best_of(lambda model=model: defaults_text(model, long_audio), 1)
            long_seconds[name] = min(long_seconds[name], seconds)
    reference = long_seconds["faster-whisper int8"]
    lines = [f"**{len(clips)} shared clips, one at a time**", "", *table(tallies, clips), "",
             f"**the long file** ({len(long_audio) / 16000:.1f} s)", "",
             "| system | seconds | vs faster-whisper int8 | text = faster-whisper int8's |", "|---|---|---|---|"]
    for name, seconds in long_seconds.items():
        same = "yes" if long_texts[name] == long_texts["faster-whisper int8"] else "no"
        lines.append(f"| {name} | {seconds:.2f} | {reference / seconds:.2f}x | {same} |")
    return lines


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.dropin")
    parser.add_argument("--main", default="base")
    parser.add_argument("--audio", default=str(SHARED_AUDIO), help="folder with manifest.jsonl")
    parser.add_argument("--limit", type=int, default=0, help="first N clips only")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    clips = manifest_clips(Path(args.audio))[: args.limit or None]
    with tempfile.TemporaryDirectory() as scratch:
        models = systems(args.main, args.threads, Path(scratch))
        print(f"# drop-in duel, {args.main}, {args.threads} threads, transcribe() defaults (beam 5, timestamps, "
              f"language detection, temperature ladder), best of {args.repeats}\n")
        print("\n".join(duel(models, clips, joined_clips(Path(args.audio)), args.repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
