"""Drafter benchmark: every drafter against our plain greedy, and transformers' own assisted generation
against its plain generate(), on the same clips, interleaved clip by clip after a warm-up.

    python -m eval.bench.drafters [--main base] [--assistant tiny.en] [--repeats 2] [--num-draft-tokens 8]

Prints one table; speedups are ratios of summed times measured in this one run. transformers' assisted modes
get the same draft length as ours. The row "off (float32 argmax)" is our plain loop without the certified
argmax (every greedy step projects all of the vocabulary in float32), to show what that saves.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from asr_specdec.core.draft_length import DEFAULT_DRAFT_TOKENS

from .cli import bench_parser
from .harness import (
    add_common_flags,
    interleave,
    load_clips,
    load_main,
    manifest_clips,
    own_clock,
    set_threads,
    transcriber,
)


@dataclass
class Tally:
    seconds: float = 0.0
    decode_seconds: float = 0.0  # total minus the encoder
    encoder: float = 0.0
    draft: float = 0.0
    verify: float = 0.0
    drafted: int = 0
    accepted: int = 0
    tokens: int = 0
    passes: int = 0
    mismatches: list = field(default_factory=list)
    error: str | None = None


def our_modes(main, assistant, draft_tokens: int, language: str):
    modes = {"off": transcriber(main, "off", language=language)}
    modes["off (float32 argmax)"] = transcriber(main, "off", language=language)
    modes["off (float32 argmax)"].runner.certified_argmax = False
    for mode in ("quantized-self", "prompt-lookup", "early-exit"):
        modes[mode] = transcriber(main, mode, language=language, num_draft_tokens=draft_tokens)
    modes["assistant (main copy)"] = transcriber(main, "assistant", assistant_model=main, language=language,
                                                 num_draft_tokens=draft_tokens)
    if assistant is not None:
        modes["universal"] = transcriber(main, "universal", assistant_model=assistant, language=language,
                                         num_draft_tokens=draft_tokens)
    return modes


def transformers_modes(main, assistant, draft_tokens: int, language: str):
    """name -> function(features) -> generated ids, through transformers' own generate()."""
    model = main.model
    # transformers logs "Both max_new_tokens and max_length..." for every round an assistant drafts
    logging.getLogger("transformers.generation.utils").setLevel(logging.ERROR)
    common = {"language": language, "task": "transcribe"}
    assisted = {**common, "num_assistant_tokens": draft_tokens}
    modes = {
        "hf off": lambda f: model.generate(f, **common),
        "hf assistant (main copy)": lambda f: model.generate(f, assistant_model=model, **assisted),
        "hf early-exit": lambda f: model.generate(f, assistant_early_exit=2, **assisted),
        "hf prompt-lookup": lambda f: model.generate(f, prompt_lookup_num_tokens=draft_tokens, **common),
    }
    if assistant is not None:
        modes["hf universal"] = lambda f: model.generate(
            f, assistant_model=assistant.model, tokenizer=main.processor.tokenizer,
            assistant_tokenizer=assistant.processor.tokenizer, **assisted)
    return modes


def run(args) -> list[str]:
    set_threads(args.threads)
    main = load_main(args.main)
    assistant = load_main(args.assistant) if args.assistant else None
    ours = our_modes(main, assistant, args.num_draft_tokens, args.language)
    theirs = transformers_modes(main, assistant, args.num_draft_tokens, args.language)
    clips = manifest_clips(Path(args.audio))[: args.limit or None]
    # (clip, samples, log-mel features): transformers is timed from the features, ours from the samples
    workload = [(clip, samples, main.processor(samples, sampling_rate=16000, return_tensors="pt").input_features)
                for clip, samples in zip(clips, load_clips(clips))]
    tallies = {name: Tally() for name in [*ours, *theirs]}
    end = main.model.generation_config.eos_token_id
    reference = {}

    def generated(generate, features):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return generate(features)[0].tolist()

    systems = {name: (lambda item, whisper=whisper: whisper.transcribe(item[1])) for name, whisper in ours.items()}
    systems.update({name: (lambda item, generate=generate: generated(generate, item[2]))
                    for name, generate in theirs.items()})

    def record(name, index, output, seconds):
        clip, tally = clips[index], tallies[name]
        tally.seconds += seconds
        if name in theirs:
            if text_tokens(output, end) != text_tokens(reference[clip], end):
                tally.mismatches.append(clip.name)
            return
        stats = output.stats
        tally.encoder += stats.encoder_seconds
        tally.decode_seconds += stats.total_seconds - stats.encoder_seconds
        tally.draft += stats.draft_seconds
        tally.verify += stats.verify_seconds
        tally.drafted += stats.drafted_tokens
        tally.accepted += stats.accepted_tokens
        tally.tokens += stats.new_tokens
        tally.passes += stats.main_passes
        if name == "off":
            reference.setdefault(clip, output.tokens)
        if output.tokens != reference[clip]:
            tally.mismatches.append(clip.name)

    # ours on its own clock (stats.total_seconds), transformers on the wall clock; what transformers refuses is
    # reported instead of stopping the bench
    def seconds_of(output, wall):
        return wall if isinstance(output, list) else own_clock(output, wall)

    rounds = interleave(systems, workload, args.repeats, each=record, catch=list(theirs), seconds_of=seconds_of)
    for name, error in rounds.errors.items():
        tallies[name].error = error
    return table(tallies, len(clips) * args.repeats)


def text_tokens(ids: list[int], end_of_text: int) -> list[int]:
    """The ids below end-of-text: transformers returns the forced prompt and end-of-text or not depending on
    the path taken (after one assisted call, even its plain generate() returns them)."""
    return [token for token in ids if token < end_of_text]


def table(tallies: dict, runs: int) -> list[str]:
    ours_plain, hf_plain = tallies["off"], tallies["hf off"]
    lines = [
        "| mode | total s | speedup vs plain | decoder-only speedup | acceptance | tokens/main pass | "
        "encoder s | draft s | verify s | identical to plain greedy |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, tally in tallies.items():
        if tally.error:
            lines.append(f"| {name} | failed: {tally.error} | | | | | | | | |")
            continue
        plain = hf_plain if name.startswith("hf ") else ours_plain
        speedup = plain.seconds / tally.seconds if tally.seconds else 0.0
        decode = (f"{plain.decode_seconds / tally.decode_seconds:.2f}x"
                  if tally.decode_seconds and not name.startswith("hf ") else "")
        acceptance = f"{tally.accepted / tally.drafted:.0%}" if tally.drafted else ""
        per_pass = f"{tally.tokens / tally.passes:.2f}" if tally.passes else ""
        split = (f"{tally.encoder:.2f} | {tally.draft:.2f} | {tally.verify:.2f}"
                 if not name.startswith("hf ") else " | | ")
        identical = "yes" if not tally.mismatches else f"NO ({len(tally.mismatches)}/{runs})"
        lines.append(f"| {name} | {tally.seconds:.2f} | {speedup:.2f}x | {decode} | {acceptance} | {per_pass} | "
                     f"{split} | {identical} |")
    return lines


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.drafters")
    add_common_flags(parser)
    parser.add_argument("--assistant", default="tiny.en", help="universal-mode assistant ('' to skip)")
    parser.add_argument("--limit", type=int, default=0, help="first N clips only")
    parser.add_argument("--num-draft-tokens", type=int, default=DEFAULT_DRAFT_TOKENS)
    parser.add_argument("--language", default="en")
    args = parser.parse_args(argv)
    print("\n".join(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
