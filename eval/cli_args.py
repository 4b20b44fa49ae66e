"""Arguments shared by the eval and the dataset transcription commands, and their checks."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from .errors import EvalError

ENGINES = ("local", "ray")


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line, like every other error of the commands."""

    def error(self, message):
        self.exit(2, f"error: {message} (see --help)\n")


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data")
    data.add_argument("--dataset", default="librispeech",
                      help="librispeech (the hub's openslr/librispeech_asr, streamed), a hub dataset id, a manifest "
                           ".jsonl, an OpenSLR LibriSpeech directory, an audiofolder directory or a parquet folder")
    data.add_argument("--config", help="dataset configuration (LibriSpeech: clean or other; default clean)")
    data.add_argument("--split", help="split (hub default test; LibriSpeech also validation)")
    data.add_argument("--limit", type=int, help="the first N utterances only")


def add_model_arguments(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    models = parser.add_argument_group("models and decoding")
    models.add_argument("--main", default="base", help="main model: pack name, CTranslate2/transformers dir, hub id")
    models.add_argument("--assistant", default="tiny.en",
                        help="assistant for universal (any tokenizer) and assistant (the main model's tokenizer; "
                             "e.g. --assistant base with --main base drafts with a copy); '' for none")
    models.add_argument("--early-exit-layer", type=int, help="decoder layers of the early-exit drafter")
    models.add_argument("--language", default="en", help="spoken language (default en)")
    models.add_argument("--do-sample", action="store_true",
                        help="sample every token instead of greedy (parity then not expected)")
    models.add_argument("--sampling-temperature", type=float, default=None, metavar="T",
                        help="with --do-sample: the temperature every token is sampled at (default 1.0; openai's "
                             "--temperature is the recipe's, below)")
    models.add_argument("--seed", type=int, default=0)
    models.add_argument("--device", default="cpu", help="cpu, cuda or auto (Ray workers with GPUs use cuda)")
    models.add_argument("--threads", type=int, help="torch threads (default: torch's choice; Ray: --cpus-per-worker)")
    return models


def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """The transcription recipe's options (word timestamps, VAD, fallback, no-speech, prompts), as transcribe's."""
    from asr_specdec.cli.recipe_arguments import add_recipe_arguments as add_arguments

    add_arguments(parser, subtitles=False)


def decoding_settings(args) -> dict:
    """EvalSettings' decoding fields from the command line (the recipe's as JSON, checked)."""
    from asr_specdec.core.logits import Sampling

    temperature = args.sampling_temperature
    return {"language": args.language or None, "do_sample": args.do_sample, "seed": args.seed,
            "sampling_temperature": Sampling.temperature if temperature is None else temperature,
            "recipe": recipe_settings(args)}


def recipe_settings(args) -> str:
    """The recipe options on the command line as the JSON that EvalSettings.recipe carries to every worker."""
    import json

    from asr_specdec.cli.recipe_arguments import check_recipe_arguments, recipe_options

    check_recipe_arguments(args)
    return json.dumps(recipe_options(args), sort_keys=True)


def add_output_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    output = parser.add_argument_group("output")
    output.add_argument("--output", default=default, help=f"folder for the rows and results (default {default})")
    output.add_argument("--resume", action="store_true", help="continue the run in --output, skipping done utterances")
    output.add_argument("--retry-failed", action="store_true", help="with --resume: run failed utterances again")
    output.add_argument("--overwrite", action="store_true", help="replace the results already in --output")


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    engine = parser.add_argument_group("engine")
    engine.add_argument("--engine", choices=ENGINES, default="local", help="local (one process) or ray")
    engine.add_argument("--num-workers", type=int, default=2, help="ray: actors, each with its own models")
    engine.add_argument("--cpus-per-worker", type=float, default=1, help="ray: CPUs (and torch threads) per actor")
    engine.add_argument("--gpus-per-worker", type=float, default=0, help="ray: GPUs per actor")
    engine.add_argument("--batch-size", type=int, default=1, help="ray: utterances per batch sent to an actor")
    engine.add_argument("--address", help="ray: cluster address (default $RAY_ADDRESS, else Ray starts here)")


def check_arguments(args) -> None:
    if getattr(args, "sampling_temperature", None) is not None and not args.do_sample:
        raise EvalError("--sampling-temperature goes with --do-sample (openai's temperature, the first of the "
                        "fallback ladder, is --temperature)")
    if args.limit is not None and args.limit < 1:
        raise EvalError(f"--limit must be at least 1, got {args.limit} (leave it out for the whole split)")
    if args.threads is not None and args.threads < 1:
        raise EvalError(f"--threads must be at least 1, got {args.threads}")
    if args.engine == "ray" and (args.num_workers < 1 or args.batch_size < 1 or args.cpus_per_worker <= 0
                                 or args.gpus_per_worker < 0):
        raise EvalError("--num-workers and --batch-size must be at least 1, --cpus-per-worker positive, "
                        "--gpus-per-worker not negative")
    if args.resume and args.overwrite:
        raise EvalError("--resume and --overwrite exclude each other")
    if args.retry_failed and not args.resume:
        raise EvalError("--retry-failed goes with --resume")
    if args.engine == "ray":
        from .ray_runner import import_ray

        import_ray()  # says how to install Ray before anything else happens


def parse_draft_lengths(text: str | None) -> tuple[int, ...]:
    from asr_specdec.core.draft_length import DEFAULT_DRAFT_TOKENS

    if text is None:
        return (DEFAULT_DRAFT_TOKENS,)
    from asr_specdec.whisper.model_options import ModelOptions

    try:
        lengths = tuple(dict.fromkeys(int(part) for part in str(text).split(",") if part.strip()))
    except ValueError:
        lengths = ()
    if not lengths:
        raise EvalError(f"--num-draft-tokens takes positive integers such as 8 or 2,4,6,8, not '{text}'")
    for length in lengths:  # each in the options' range (an OptionError names it)
        ModelOptions(num_draft_tokens=length)
    return lengths


def engine_options(args):
    from .job import EngineOptions

    return EngineOptions(args.engine, args.num_workers, args.cpus_per_worker, args.gpus_per_worker,
                         args.batch_size, args.address)


def job_options(args, command: str):
    from .job import JobOptions

    return JobOptions(Path(args.output), args.limit, args.resume, args.retry_failed, args.overwrite,
                      engine_options(args), command)


def dataset_spec(spec: str) -> str:
    """A local dataset as an absolute path (so that resuming from another folder finds the same data)."""
    path = Path(spec).expanduser()
    return str(path.resolve()) if path.exists() else spec


def device_and_threads(args) -> tuple[str, int | None]:
    if args.engine != "ray":
        return args.device, args.threads
    device = "cuda" if args.gpus_per_worker > 0 and args.device == "cpu" else args.device
    return device, max(1, int(args.cpus_per_worker))


def run_command(run, parser: argparse.ArgumentParser, module: str, argv: list[str] | None, interrupted: str) -> int:
    """`run(args, command)` as a command line: user errors are one line and exit 2, Ctrl-C before any result
    says `interrupted` and exits 130. `command` is the line that reproduces the run, for the report."""
    from asr_specdec.cli.commands import error_line
    from asr_specdec.errors import SpecdecError

    args = parser.parse_args(argv)
    command = f"python -m {module} " + shlex.join(sys.argv[1:] if argv is None else argv)
    try:
        return run(args, command)
    except SpecdecError as error:
        print(f"error: {' '.join(error_line(error, parser).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        return 130
