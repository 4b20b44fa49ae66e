"""`python -m asr_specdec.transcribe FILE --live`: play files in real time (or `--live-speed N` times faster) into a
live transcriber and print the text as it is committed, or (`--format jsonl`) one JSON object per update."""

from __future__ import annotations

import json
import sys

LIVE_FORMATS = ("text", "jsonl")
CHUNK_SECONDS = 0.5


def check_live_args(args) -> str | None:
    """The one-line problem with a --live command line, or None."""
    if args.format not in LIVE_FORMATS:
        return f"--live prints {' or '.join(LIVE_FORMATS)}, not {args.format}"
    if not args.live_speed > 0:
        return "--live-speed must be a positive number"
    if args.output:
        return "--live prints to stdout as it goes: redirect it instead of --output"
    if args.batch_size != 1:
        return "--live plays one file at a time: leave out --batch-size"
    return None


def run_live(args, asr) -> int:
    from ..errors import SpecdecError
    from ..whisper.io.audio import load_audio
    from ..whisper.live.replay import play, summarize
    from ..whisper.live.streaming import StreamingTranscriber

    failures = 0
    for file in args.files:
        try:
            samples = load_audio(file)
        except SpecdecError as error:
            message = str(error) if str(error).startswith(file) else f"{file}: {error}"
            print(f"error: {message}", file=sys.stderr)
            failures += 1
            continue
        if len(args.files) > 1 and args.format == "text":
            print(f"== {file}", flush=True)
        # --mode off asks for plain decoding: no drafting at all, not even from the last hypothesis
        stream = StreamingTranscriber(asr, compare=args.compare, hypothesis_drafting=asr.mode != "off")
        updates, printed = [], False
        for live in play(stream, samples, chunk_seconds=CHUNK_SECONDS, speed=args.live_speed, clock="real"):
            updates.append(live)
            update = live.update
            if args.format == "jsonl":
                print(json.dumps({"file": file, "clock": round(live.clock, 3), **update.as_dict()},
                                 ensure_ascii=False), flush=True)
            elif update.new_committed:
                print((" " if printed else "") + update.new_committed, end="", flush=True)
                printed = True
            if args.stats:
                print(update_line(live), file=sys.stderr)
        if args.format == "text":
            print(flush=True)
        if args.stats or args.compare:
            print(summary_line(file, summarize(updates, len(samples) / 16000)), file=sys.stderr)
    return 1 if failures else 0


def update_line(live) -> str:
    update = live.update
    line = (f"[{live.clock:7.2f} s] audio {update.audio_seconds:6.2f} s, buffer {update.buffer_seconds:5.2f} s, "
            f"decode {update.decode_seconds:.3f} s")
    if update.stats is not None:
        line += f" (encoder {update.stats.encoder_seconds:.3f} s, {update.stats.main_passes} main passes for " \
                f"{update.stats.new_tokens} tokens)"
    if update.drafting is not None:
        line += f", from last hypothesis {update.drafting.hypothesis_accepted}/{update.drafting.hypothesis_drafted}"
    if update.plain_decode_seconds is not None:
        line += f", plain {update.plain_decode_seconds:.3f} s, identical {'yes' if update.identical else 'NO'}"
    if update.lag_seconds is not None:
        line += f", committed lag {update.lag_seconds:.2f} s"
    return line


def summary_line(file: str, summary: dict) -> str:
    line = (f"live {file}: {summary['updates']} updates, {summary['decodes']} decodes; decode median "
            f"{summary['decode_median']} s, p95 {summary['decode_p95']} s "
            f"(encoder median {summary['encoder_median']} s)")
    if "plain_median" in summary:
        line += (f"; plain median {summary['plain_median']} s, p95 {summary['plain_p95']} s; speedup median "
                 f"{summary['speedup_median']}x (over {summary['compared_updates']} updates after a warm-up one, "
                 "each decode encoding its buffer, plain and speculative taking turns going first); identical "
                 f"output: {'yes' if summary['identical'] else 'NO'}")
    return line + (f"; mean lag of committed words {summary['mean_word_lag']} s; real-time factor {summary['rtf']}")
