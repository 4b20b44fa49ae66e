"""`python -m eval.run`: plain greedy and each drafter on the same utterances; WER, parity, speedup.

    python -m eval.run --dataset librispeech --split test --limit 50 --output results/ls50
    python -m eval.run --dataset ../shared/audio/manifest.jsonl --main base --output results/shared
    python -m eval.run --dataset LibriSpeech/ --split test --num-draft-tokens 2,4,6,8 --modes quantized-self
    python -m eval.run --dataset ../shared/audio/manifest.jsonl --engine ray --num-workers 2
    python -m eval.run --dataset ../shared/audio/manifest.jsonl --beam-size 5   # every mode with 5 beams

With --beam-size N every mode decodes with N beams and parity and speedup are against plain beam search (the
report adds beam steps per main pass); run it without to compare the WER with greedy decoding's.
Writes OUTPUT/rows.jsonl (every row, as each utterance finishes), report.json, report.md and report.png.
Ctrl-C keeps the finished rows and writes the report so far; `--resume` continues the run.
"""

from __future__ import annotations

import argparse
import sys

from asr_specdec.core.modes import ASSISTANT_MODES, MODES

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
from .errors import EvalError
from .settings import EvalSettings


def build_parser() -> OneLineParser:
    lines = __doc__.splitlines()
    parser = OneLineParser(prog="python -m eval.run", description=lines[0], epilog="\n".join(lines[1:]),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser)
    models = add_model_arguments(parser)
    models.add_argument("--modes", help=f"comma-separated, from {','.join(MODES)} (default: all; off always runs)")
    models.add_argument("--num-draft-tokens", help="draft length, or a sweep such as 2,4,6,8 (default 8)")
    models.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up decode")
    add_recipe_arguments(parser)
    add_output_arguments(parser, default="eval-results")
    add_engine_arguments(parser)
    return parser


def parse_modes(text: str | None) -> tuple[tuple[str, ...], bool]:
    """(modes, whether the user chose them)."""
    if not text:
        return MODES, False
    modes = tuple(dict.fromkeys(mode.strip() for mode in text.split(",") if mode.strip()))
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown or not modes:
        raise EvalError(f"unknown mode {', '.join(unknown) or repr(text)}: choose from {', '.join(MODES)}")
    return modes, True


def plan_modes(modes: tuple[str, ...], chosen: bool, main_info: dict,
               assistant_info: dict | None) -> tuple[tuple[str, ...], str | None, list[str]]:
    """(modes to run, the model assistant mode drafts with, notes).

    Assistant mode needs the main model's tokenizer. Without such an assistant, the default run measures it
    with a copy of the main model drafting (with a note) and universal without an assistant is skipped;
    a mode the user asked for by name is refused instead."""
    same_tokenizer = assistant_info is not None and (
        not main_info["vocab_size"] or assistant_info["vocab_size"] == main_info["vocab_size"])
    problems = {}
    if assistant_info is None:
        problems["universal"] = "no --assistant was given"
    if not same_tokenizer:
        problems["assistant"] = (
            "no --assistant was given" if assistant_info is None else
            f"it needs the main model's tokenizer, but the assistant {assistant_info['name']} has "
            f"{assistant_info['vocab_size']} tokens and {main_info['name']} {main_info['vocab_size']}")
    notes, assistant_mode_model = [], None
    for mode, reason in problems.items():
        if mode not in modes:
            continue
        if chosen:
            raise EvalError(f"mode '{mode}' cannot run: {reason} (--assistant {main_info['name']} drafts with a "
                            "copy of the main model)")
        if mode == "assistant":
            assistant_mode_model = main_info["name"]
            notes.append(f"mode assistant drafts with a copy of the main model {main_info['name']}: {reason}; "
                         "pass --assistant with a same-tokenizer model to measure a smaller one.")
        else:
            notes.append(f"mode {mode} skipped: {reason}.")
    kept = tuple(mode for mode in modes if mode != "universal" or "universal" not in problems)
    return kept, assistant_mode_model, notes


def drop_cpu_only_modes(modes: tuple[str, ...], chosen: bool, device: str) -> tuple[tuple[str, ...], list[str]]:
    """The int8 self-drafter runs on the CPU only: on a GPU it is skipped, or refused when asked for by name."""
    from .transcribers import torch_device

    if "quantized-self" not in modes or torch_device(device) == "cpu":
        return modes, []
    reason = "torch's dynamic int8 quantization runs on the CPU only"
    if chosen:
        raise EvalError(f"mode 'quantized-self' cannot run on {device}: {reason}")
    return tuple(mode for mode in modes if mode != "quantized-self"), [f"mode quantized-self skipped: {reason}."]


def run(args, command: str) -> int:
    from .job import run_eval
    from .model_info import describe_model
    from .sources import load_utterances

    check_arguments(args)
    requested, chosen = parse_modes(args.modes)
    draft_lengths = parse_draft_lengths(args.num_draft_tokens)
    utterances = load_utterances(args.dataset, args.config, args.split)
    main_info = describe_model(args.main)
    wants_assistant = args.assistant and any(mode in ASSISTANT_MODES for mode in requested)
    assistant_info = describe_model(args.assistant) if wants_assistant else None
    modes, assistant_mode_model, notes = plan_modes(requested, chosen, main_info, assistant_info)
    device, threads = device_and_threads(args)
    modes, cpu_notes = drop_cpu_only_modes(modes, chosen, device)
    notes += cpu_notes
    settings = EvalSettings(
        dataset=dataset_spec(args.dataset), config=args.config, split=args.split, modes=modes, main=args.main,
        assistant=args.assistant or None, assistant_mode_model=assistant_mode_model, draft_lengths=draft_lengths,
        early_exit_layer=args.early_exit_layer, device=device, threads=threads, warmup=not args.no_warmup,
        **decoding_settings(args))
    models = {"main": main_info}
    if "universal" in modes or ("assistant" in modes and not assistant_mode_model):
        models["assistant"] = assistant_info
    if assistant_mode_model:
        models["assistant mode"] = main_info
    return run_eval(settings, utterances, job_options(args, command), models, notes)


def main(argv: list[str] | None = None) -> int:
    return run_command(run, build_parser(), "eval.run", argv, "interrupted before any utterance was decoded")


if __name__ == "__main__":
    sys.exit(main())
