"""Live-transcription benchmark: each shared clip (and all of them joined, 64 s) streamed in 0.5-s chunks at
real-time pace on a simulated clock; every update drafted from the last hypothesis, and the same buffer decoded
again plain and with the transcriber's own drafter alone, interleaved update by update.

    python -m eval.bench.streaming [--main base] [--mode quantized-self] [--dtype float32] [--threads 2]
                                   [--chunk 0.5] [--min-chunk 0.5] [--clock simulated|fixed] [--clips NAME,...]
                                   [--no-joined] [--output raw.json]

The simulated clock advances by chunk arrivals and by each update's measured decode time (drafting from the last
hypothesis), so updates cover whatever audio arrived while the last one decoded, as live (`--clock fixed`: one
update per chunk whatever the decode time, a schedule that does not depend on the machine). Prints per clip: the
WER of the final committed text against the offline transcript of the whole clip, per-update decode seconds
(median and p95) for each way of decoding, the median per-update speedup over plain, the same without the
encoder (which every way pays alike), the mean lag of committed words, the real-time factor (decode time over
audio time; with updates back to back it cannot fall below the share of time spent decoding) and whether every
update's tokens were identical across the three ways.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from .cli import bench_parser
from .harness import add_common_flags, joined_clips, set_threads

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def stream_clip(asr, arms: dict, samples: np.ndarray, chunk: float, min_chunk: float, clock: str) -> dict:
    """Stream one clip; after each update, decode its buffer again with every arm (order alternating)."""
    from asr_specdec.whisper.live.replay import play, summarize
    from asr_specdec.whisper.live.streaming import StreamingTranscriber

    windows, cpu = [], {name: [] for name in ("hypothesis", *arms)}

    def recording(batch, speculation):
        windows.append(batch[0])
        asr.forget_encoding()  # every way encodes its buffer: none takes another's kept encoding
        started = time.process_time()
        decoded = asr.decode_windows(batch, speculation)
        cpu["hypothesis"].append(time.process_time() - started)
        return decoded

    stream = StreamingTranscriber(asr, min_chunk_seconds=min_chunk, decode_windows=recording)
    seconds = {name: [] for name in ("hypothesis", *arms)}
    encoder, updates, identical, order = [], [], True, list(arms)
    for live in play(stream, samples, chunk_seconds=chunk, clock=clock):
        updates.append(live)
        update = live.update
        if update.stats is None:
            continue
        window = windows[-1]
        begin = round(update.buffer_start * 16000)
        buffer = samples[begin:begin + round(update.buffer_seconds * 16000)]
        seconds["hypothesis"].append(update.decode_seconds)
        encoder.append(update.stats.encoder_seconds)
        order.reverse()
        for name in order:
            asr.forget_encoding()
            started, cpu_started = time.perf_counter(), time.process_time()
            # the live update's own window (prompt, rules, silence judgement, words), on this arm's features
            tokens = asr.decode_windows([replace(window, features=asr.features(buffer))], arms[name])[0].tokens
            seconds[name].append(time.perf_counter() - started)
            cpu[name].append(time.process_time() - cpu_started)
            identical = identical and tokens == update.tokens
    summary = summarize(updates, len(samples) / 16000)
    summary.update(seconds=seconds, cpu=cpu, encoder=encoder, identical=identical,
                   drafted=sum(u.update.drafting.hypothesis_accepted for u in updates if u.update.drafting),
                   tokens=sum(u.update.stats.new_tokens for u in updates if u.update.stats))
    return summary


def row(name: str, duration: float, wer: float, summary: dict) -> str:
    seconds = summary["seconds"]
    encoder = np.array(summary["encoder"])

    def spread(values) -> str:
        return f"{np.median(values):.3f} / {np.percentile(values, 95):.3f}" if len(values) else "-"

    hypothesis, plain = np.array(seconds["hypothesis"]), np.array(seconds["plain"])
    speedup = np.median(plain / hypothesis) if len(plain) else float("nan")
    decoder_speedup = np.median((plain - encoder) / (hypothesis - encoder)) if len(plain) else float("nan")
    own = spread(seconds["own drafter"]) if "own drafter" in seconds else "-"
    lag = summary["mean_word_lag"]
    encoder_median = np.median(encoder) if len(encoder) else 0.0
    return (f"| {name} | {duration:.1f} | {len(hypothesis)} | {wer:.1%} | {spread(hypothesis)} | {own} | "
            f"{spread(plain)} | {speedup:.2f}x | {decoder_speedup:.2f}x | {encoder_median:.3f} | "
            f"{'-' if lag is None else f'{lag:.2f}'} | {summary['rtf']:.2f} | "
            f"{summary['drafted']}/{summary['tokens']} | {'yes' if summary['identical'] else 'NO'} |")


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.streaming")
    add_common_flags(parser, repeats=False)
    parser.add_argument("--mode", default="quantized-self", help="the transcriber's own drafter (the fallback)")
    parser.add_argument("--dtype", choices=DTYPES, default="float32")
    parser.add_argument("--chunk", type=float, default=0.5, help="seconds of audio per arriving chunk")
    parser.add_argument("--min-chunk", type=float, default=0.5, help="least new audio that starts an update")
    parser.add_argument("--clock", choices=("simulated", "fixed"), default="simulated",
                        help="simulated: real-time pace, decode time advances the clock; fixed: one update per "
                             "chunk whatever the decode time (a schedule that does not depend on the machine's load)")
    parser.add_argument("--clips", help="comma-separated clip names (default: every clip of the manifest)")
    parser.add_argument("--no-joined", action="store_true", help="leave out the 64-s file of all clips joined")
    parser.add_argument("--output", help="also write the raw per-update numbers here (JSON)")
    args = parser.parse_args(argv)
    set_threads(args.threads)

    from asr_specdec.whisper import SpeculativeWhisper
    from asr_specdec.whisper.io.audio import load_audio
    from asr_specdec.whisper.runtime.pipeline import PLAIN
    from eval.metrics import word_errors

    folder = Path(args.audio)
    entries = [json.loads(line) for line in (folder / "manifest.jsonl").read_text().splitlines() if line.strip()]
    wanted = set(args.clips.split(",")) if args.clips else None
    clips = {entry["audio"]: load_audio(folder / entry["audio"]) for entry in entries
             if wanted is None or entry["audio"] in wanted}
    if not args.no_joined:
        clips["all clips joined"] = joined_clips(folder)
    asr = SpeculativeWhisper(args.main, mode=args.mode, language="en", dtype=DTYPES[args.dtype])
    arms = {"plain": PLAIN, "own drafter": asr.speculation}
    asr.transcribe(next(iter(clips.values()))[:16000 * 5])  # warm-up
    print(f"{args.main} {args.dtype}, fallback drafter {args.mode}, {args.threads} threads, chunks of "
          f"{args.chunk} s, updates after at least {args.min_chunk} s of new audio, {args.clock} clock\n")
    print("| clip | s | updates | WER vs offline | hypothesis drafting median / p95 s | own drafter alone | "
          "plain | speedup (median per update) | without encoder | encoder s | mean lag of committed words s | "
          "RTF | tokens from last hypothesis | identical |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    raw, totals = {}, {name: [] for name in ("hypothesis", "plain", "own drafter", "encoder")}
    cpu_totals = {name: 0.0 for name in ("hypothesis", "plain", "own drafter")}
    for name, samples in clips.items():
        offline = asr.transcribe(samples).text
        summary = stream_clip(asr, arms, samples, args.chunk, args.min_chunk, args.clock)
        errors, words = word_errors(offline, summary["text"])
        print(row(name, len(samples) / 16000, errors / max(words, 1), summary), flush=True)
        for arm in ("hypothesis", "plain", "own drafter"):
            totals[arm] += summary["seconds"][arm]
        totals["encoder"] += summary["encoder"]
        for arm in cpu_totals:
            cpu_totals[arm] += sum(summary["cpu"][arm])
        raw[name] = {**summary, "offline": offline}
    hypothesis, plain_seconds = np.array(totals["hypothesis"]), np.array(totals["plain"])
    encoder = np.array(totals["encoder"])
    print(f"\nall updates ({len(hypothesis)}): median speedup over plain {np.median(plain_seconds / hypothesis):.2f}x, "
          f"ratio of summed times {plain_seconds.sum() / hypothesis.sum():.2f}x, without the encoder "
          f"{(plain_seconds - encoder).sum() / (hypothesis - encoder).sum():.2f}x; own drafter alone "
          f"{plain_seconds.sum() / np.sum(totals['own drafter']):.2f}x")
    print(f"process CPU time (both threads; less sensitive to other load): plain {cpu_totals['plain']:.1f} s, "
          f"hypothesis drafting {cpu_totals['hypothesis']:.1f} s "
          f"({cpu_totals['plain'] / cpu_totals['hypothesis']:.2f}x), "
          f"own drafter alone {cpu_totals['own drafter']:.1f} s "
          f"({cpu_totals['plain'] / cpu_totals['own drafter']:.2f}x)")
    if args.output:
        Path(args.output).write_text(json.dumps(raw, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
