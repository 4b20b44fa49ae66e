"""`python -m asr_specdec.transcribe FILE [FILE...]`: transcribe audio files, speculatively by default.

Every failure is one line on stderr and a non-zero exit code; with several files, one bad file does not
stop the others, whose results are still written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..whisper.io.records import result_record
from .commands import error_line, format_stats, run_command
from .recipe_arguments import add_recipe_arguments, check_recipe_arguments
from .transcriber_arguments import (
    DEFAULTS_HELP,
    add_model_arguments,
    add_sampling_arguments,
    build_transcriber,
    plain_sibling,
)

FORMATS = ("text", "json", "jsonl", "srt", "vtt")
def build_parser() -> argparse.ArgumentParser:
    from ..whisper.options import TranscribeOptions

    parser = argparse.ArgumentParser(prog="python -m asr_specdec.transcribe", description=__doc__.splitlines()[0],
                                     epilog=DEFAULTS_HELP)
    parser.add_argument("files", nargs="+", metavar="FILE", help="audio files (wav, flac, ogg, mp3, ...)")
    add_model_arguments(parser)
    add_sampling_arguments(parser)
    parser.add_argument("--task", choices=("transcribe", "translate"), default=TranscribeOptions.task)
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--timestamps", action=argparse.BooleanOptionalAction, default=None,
                        help="decode with Whisper's timestamp tokens, giving segments with real times (default: on "
                             "for srt/vtt and for audio over 30 s)")
    add_recipe_arguments(parser)
    parser.add_argument("--batch-size", type=int, default=1,
                        help="decode several files together, this many rows at a time (without timestamps; audio "
                             "over 30 s is cut into quiet-point windows that join the batch)")
    parser.add_argument("--output", "-o", help="output file (one input) or directory (several inputs)")
    parser.add_argument("--stats", action="store_true", help="print acceptance and timing telemetry to stderr")
    parser.add_argument("--compare", action="store_true",
                        help="also decode with plain greedy and print both times (the median of 3 interleaved runs "
                             "of each after a warm-up, every run encoding the audio), the speedup and whether the "
                             "outputs are identical")
    parser.add_argument("--live", action="store_true",
                        help="play each file in real time into a live transcriber (each update drafts from the last "
                             "hypothesis) and print the text as it is committed; --format jsonl: one JSON object per "
                             "update; --compare: each update also decoded plain")
    parser.add_argument("--live-speed", type=float, default=1.0, help="with --live: play N times faster")
    return parser


def render(result, output_format: str, file: str, comparison: dict | None = None,
           word_cues: str = "segment") -> str:
    from ..whisper.io.formats import to_srt, to_text, to_vtt

    if output_format == "srt":
        return to_srt(result.segments, word_cues)
    if output_format == "vtt":
        return to_vtt(result.segments, word_cues)
    if output_format == "json":
        return json.dumps(result_record(result, file, comparison), ensure_ascii=False, indent=2) + "\n"
    if output_format == "jsonl":
        return json.dumps(result_record(result, file, comparison), ensure_ascii=False) + "\n"
    return to_text(result.segments) + "\n"


def output_path(args, file: str, several: bool) -> Path | None:
    if not args.output:
        return None
    target = Path(args.output)
    if several or target.is_dir():
        extension = {"text": "txt"}.get(args.format, args.format)
        target.mkdir(parents=True, exist_ok=True)
        return target / f"{Path(file).stem}.{extension}"
    return target


def run(args) -> int:
    from tqdm import tqdm

    from ..errors import SpecdecError
    from ..whisper.options import check_batch

    if args.speakers is not None and args.live:
        print("error: --speakers labels whole-file transcriptions: drop --live", file=sys.stderr)
        return 2
    if args.live:
        from .transcribe_live import check_live_args

        problem = check_live_args(args)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    try:
        check_recipe_arguments(args)
        transcriber, reason = build_transcriber(args)
        if args.batch_size > 1:
            check_batch(transcriber.options)
        plain = plain_sibling(transcriber) if args.compare and not args.live else None
    except SpecdecError as error:
        print(f"error: {error_line(error, build_parser())}", file=sys.stderr)
        return 2
    if args.stats:
        print(f"models: main {transcriber.main_name}, mode {transcriber.mode}"
              f"{', assistant ' + transcriber.assistant_name if transcriber.assistant_name else ''} ({reason})",
              file=sys.stderr)
    if args.live:
        from .transcribe_live import run_live

        return run_live(args, transcriber)
    if args.batch_size < 1:
        print("error: --batch-size must be at least 1", file=sys.stderr)
        return 2
    several = len(args.files) > 1
    failures = 0
    records = []
    progress = tqdm(total=len(args.files), unit="file", disable=not several, file=sys.stderr)

    def fail(file: str, error: Exception) -> None:
        nonlocal failures
        failures += 1
        if isinstance(error, SpecdecError):
            message = str(error) if str(error).startswith(file) else f"{file}: {error}"
        else:  # a bug must not take the other files down or print a traceback
            message = f"{file}: unexpected {type(error).__name__}: {error}"
        tqdm.write(f"error: {message}", file=sys.stderr)

    def emit(file: str, result) -> None:
        comparison = compare(plain, transcriber, file) if plain is not None else None
        rendered = render(result, args.format, file, comparison, args.word_cues)
        destination = output_path(args, file, several)
        if destination is not None:
            destination.write_text(rendered, encoding="utf-8")
        elif args.format == "json" and several:
            records.append(result_record(result, file, comparison))
        else:
            header = f"== {file}\n" if several and args.format == "text" else ""
            tqdm.write(header + rendered.rstrip("\n"), file=sys.stdout)
        if args.stats:
            label = f"{file} [{result.mode}, {result.compute_type}, {result.backend}]"
            tqdm.write(format_stats(result.stats, label), file=sys.stderr)

    for group in _groups(args.files, args.batch_size):
        for file, outcome in _transcribe_group(transcriber, group):
            try:
                if isinstance(outcome, Exception):
                    raise outcome
                emit(file, outcome)
            except Exception as error:
                fail(file, error)
            progress.update()
    progress.close()
    if records:
        print(json.dumps(records, ensure_ascii=False, indent=2))
    return 1 if failures else 0


def _groups(files: list[str], size: int) -> list[list[str]]:
    return [files[begin:begin + size] for begin in range(0, len(files), size)]


def _transcribe_group(transcriber, files: list[str]) -> list[tuple[str, object]]:
    """(file, result or the exception it raised) for each file; a group of more than one decodes as a batch,
    after reading every file on its own so that one unreadable file fails alone."""
    from ..whisper.io.audio import load_audio

    if len(files) == 1:
        try:
            return [(files[0], transcriber.transcribe(files[0]))]
        except Exception as error:
            return [(files[0], error)]
    outcomes: dict[str, object] = {}
    readable = {}
    for file in files:
        try:
            readable[file] = load_audio(file)
        except Exception as error:
            outcomes[file] = error
    if readable:
        try:
            results = transcriber.transcribe_batch(list(readable.values()), batch_size=len(readable))
            outcomes.update(zip(readable, results))
        except Exception as error:
            outcomes.update((file, error) for file in readable)
    return [(file, outcomes[file]) for file in files]


def compare(plain, speculative, file: str) -> dict:
    """Time plain greedy against `speculative` on `file` as a benchmark does (whisper/comparison.py: each side
    warmed up, interleaved repeats, their medians, every run encoding the audio); print and return the times, the
    speedup and whether the tokens are identical."""
    from ..whisper.comparison import compare_speeds

    comparison = compare_speeds(plain, speculative, file)
    print(f"compare {file}: plain {comparison.plain_seconds:.2f} s, {comparison.speculative.mode} "
          f"{comparison.speculative_seconds:.2f} s ({comparison.method}), speedup {comparison.speedup:.2f}x, "
          f"identical output: {'yes' if comparison.identical else 'NO'}", file=sys.stderr)
    return comparison.as_dict()


def main(argv: list[str] | None = None) -> int:
    import warnings

    with warnings.catch_warnings():  # a warning (a prompt cut to Whisper's limit) is one line, no source line
        warnings.simplefilter("default")
        warnings.showwarning = lambda message, *_args, **_kwargs: print(f"warning: {message}", file=sys.stderr)
        return run_command(run, build_parser().parse_args(argv),
                           "interrupted: results already written are kept")


if __name__ == "__main__":
    sys.exit(main())
