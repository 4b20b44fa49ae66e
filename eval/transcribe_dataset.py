"""`python -m eval.transcribe_dataset`: transcribe a whole dataset with one mode, in one process or on Ray.

    python -m eval.transcribe_dataset --dataset librispeech --split test --mode quantized-self --output out/
    python -m eval.transcribe_dataset --dataset LibriSpeech/ --engine ray --num-workers 8 --address auto

Writes OUTPUT/rows.jsonl as utterances finish (text, tokens, timings, telemetry; `--resume` continues it)
and OUTPUT/transcripts.parquet at the end.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from asr_specdec.core.modes import MODES

from .cli_args import (
    OneLineParser,
    add_data_arguments,
    add_engine_arguments,
    add_model_arguments,
    add_output_arguments,
    add_recipe_arguments,
    check_arguments,
    dataset_spec,
    decoding_settings,
    device_and_threads,
    job_options,
    parse_draft_lengths,
    run_command,
)
from .settings import EvalSettings

PARQUET_FILE = "transcripts.parquet"


def build_parser() -> OneLineParser:
    lines = __doc__.splitlines()
    parser = OneLineParser(prog="python -m eval.transcribe_dataset", description=lines[0],
                           epilog="\n".join(lines[1:]), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser)
    models = add_model_arguments(parser)
    models.add_argument("--mode", choices=MODES, default="quantized-self", help="drafting mode")
    models.add_argument("--num-draft-tokens", help="draft length (default 8)")
    add_recipe_arguments(parser)
    add_output_arguments(parser, default="transcripts")
    add_engine_arguments(parser)
    return parser


def write_parquet(rows: list[dict], path: Path) -> None:
    import pyarrow
    import pyarrow.parquet

    pyarrow.parquet.write_table(pyarrow.Table.from_pylist(rows), path)


def run(args, command: str) -> int:
    from .job import run_rows
    from .model_info import describe_model
    from .sources import load_utterances

    check_arguments(args)
    utterances = load_utterances(args.dataset, args.config, args.split)
    describe_model(args.main)  # a bad model spec fails here, before any output is written
    device, threads = device_and_threads(args)
    settings = EvalSettings(
        dataset=dataset_spec(args.dataset), config=args.config, split=args.split, modes=(args.mode,),
        main=args.main, assistant=args.assistant or None, draft_lengths=parse_draft_lengths(args.num_draft_tokens),
        early_exit_layer=args.early_exit_layer, device=device, threads=threads, warmup=False, plain_baseline=False,
        **decoding_settings(args))
    code, store = run_rows(settings, utterances, job_options(args, command), label="transcribe")
    rows = store.rows()
    if rows:
        write_parquet(rows, store.folder / PARQUET_FILE)
        failed = sum(row["status"] != "ok" for row in rows)
        print(f"{len(rows)} utterances ({failed} failed) in {store.path} and {store.folder / PARQUET_FILE}",
              file=sys.stderr)
    return code or (1 if not rows or any(row["status"] != "ok" for row in rows) else 0)


def main(argv: list[str] | None = None) -> int:
    return run_command(run, build_parser(), "eval.transcribe_dataset", argv,
                       "interrupted before any utterance was transcribed")


if __name__ == "__main__":
    sys.exit(main())
