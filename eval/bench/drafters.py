"""Drafter benchmark: every drafter against our plain greedy, and transformers' own assisted generation
against its plain generate(), on the same clips, interleaved clip by clip after a warm-up.

    python -m eval.bench.drafters [--main base] [--assistant tiny.en] [--repeats 2] [--num-draft-tokens 8]

Prints one table; speedups are ratios of summed times measured in this one run. transformers' assisted modes
get the same draft length as ours. The row "off (float32 argmax)" is our plain loop without the certified
argmax (every greedy step projects all of the vocabulary in float32), to show what that saves.
"""

from __future__ import annotations

import json
import logging
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

from asr_specdec.core.draft_length import DEFAULT_DRAFT_TOKENS

from ..paths import SHARED_AUDIO
from .cli import bench_parser


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


def manifest_clips(folder: Path) -> list[Path]:
    lines = (folder / "manifest.jsonl").read_text().splitlines()
    return [folder / json.loads(line)["audio"] for line in lines if line.strip()]


def our_modes(main, assistant, draft_tokens: int, language: str):
    from asr_specdec.whisper import SpeculativeWhisper

    modes = {"off": SpeculativeWhisper(main, mode="off", language=language)}
    modes["off (float32 argmax)"] = SpeculativeWhisper(main, mode="off", language=language)
    modes["off (float32 argmax)"].runner.certified_argmax = False
    for mode in ("quantized-self", "prompt-lookup", "early-exit"):
        modes[mode] = SpeculativeWhisper(main, mode=mode, language=language, num_draft_tokens=draft_tokens)
    modes["assistant (main copy)"] = SpeculativeWhisper(main, mode="assistant", assistant_model=main,
                                                        language=language, num_draft_tokens=draft_tokens)
    if assistant is not None:
        modes["universal"] = SpeculativeWhisper(main, mode="universal", assistant_model=assistant,
                                                language=language, num_draft_tokens=draft_tokens)
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
    from asr_specdec.weights.whisper_models import load_whisper
    from asr_specdec.whisper.io.audio import load_audio

    torch.set_num_threads(args.threads)
    main = load_whisper(args.main)
    assistant = load_whisper(args.assistant) if args.assistant else None
    ours = our_modes(main, assistant, args.num_draft_tokens, args.language)
    theirs = transformers_modes(main, assistant, args.num_draft_tokens, args.language)
    clips = manifest_clips(Path(args.audio))[: args.limit or None]
    audio = {clip: load_audio(clip) for clip in clips}
    tallies = {name: Tally() for name in [*ours, *theirs]}
    end = main.model.generation_config.eos_token_id
    reference = {}

    for transcriber in ours.values():  # warm-up: first calls pay one-off allocation costs
        transcriber.transcribe(audio[clips[0]])
    warm_features = main.processor(audio[clips[0]], sampling_rate=16000, return_tensors="pt").input_features
    for generate in theirs.values():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                generate(warm_features)
        except Exception:  # noqa: BLE001 (the timed run reports the refusal)
            pass
    for _ in range(args.repeats):
        for clip in clips:
            samples = audio[clip]
            for name, transcriber in ours.items():
                result = transcriber.transcribe(samples)
                tally, stats = tallies[name], result.stats
                tally.seconds += stats.total_seconds
                tally.encoder += stats.encoder_seconds
                tally.decode_seconds += stats.total_seconds - stats.encoder_seconds
                tally.draft += stats.draft_seconds
                tally.verify += stats.verify_seconds
                tally.drafted += stats.drafted_tokens
                tally.accepted += stats.accepted_tokens
                tally.tokens += stats.new_tokens
                tally.passes += stats.main_passes
                if name == "off":
                    reference.setdefault(clip, result.tokens)
                if result.tokens != reference[clip]:
                    tally.mismatches.append(clip.name)
            features = main.processor(samples, sampling_rate=16000, return_tensors="pt").input_features
            for name, generate in theirs.items():
                tally = tallies[name]
                if tally.error:
                    continue
                started = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        ids = generate(features)[0].tolist()
                except Exception as error:  # report what transformers refuses instead of stopping the bench
                    tally.error = f"{type(error).__name__}: {str(error).splitlines()[0][:80]}"
                    continue
                tally.seconds += time.perf_counter() - started
                if text_tokens(ids, end) != text_tokens(reference[clip], end):
                    tally.mismatches.append(clip.name)
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
    parser.add_argument("--main", default="base")
    parser.add_argument("--assistant", default="tiny.en", help="universal-mode assistant ('' to skip)")
    parser.add_argument("--audio", default=str(SHARED_AUDIO), help="folder with manifest.jsonl")
    parser.add_argument("--limit", type=int, default=0, help="first N clips only")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--num-draft-tokens", type=int, default=DEFAULT_DRAFT_TOKENS)
    parser.add_argument("--language", default="en")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args(argv)
    print("\n".join(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
