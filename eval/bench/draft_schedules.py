"""Draft-length schedules: fixed, transformers' +2/-1 heuristic, a confidence threshold and the adaptive
schedule, each with a good drafter (the int8 self-drafter) and a bad one (a random distil-shaped assistant: two
decoder layers reading the main encoder), against plain decoding, clip by clip interleaved.

    python -m eval.bench.draft_schedules [--main base] [--limit 12] [--threads 2]

Prints seconds after load (summed over the clips), the ratio to plain, acceptance and draft tokens per round.
A bad drafter should cost little more than plain decoding; a good one should keep its speed.
"""

from __future__ import annotations

from pathlib import Path

import torch

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

SCHEDULES = {
    "fixed 8": {"draft_schedule": "fixed", "num_draft_tokens": 8},
    "heuristic +2/-1 (from 8)": {"draft_schedule": "heuristic", "num_draft_tokens": 8},
    "confidence 0.5, fixed 8": {"draft_schedule": "fixed", "num_draft_tokens": 8,
                                "assistant_confidence_threshold": 0.5},
    "adaptive (default)": {},
}


def random_assistant(main_model, layers: int = 2, seed: int = 0):
    """A decoder-only Whisper (WhisperForCausalLM) with the main model's width and vocabulary and random weights:
    the shape of distil-whisper's assistants, with none of their knowledge."""
    from transformers import WhisperConfig, WhisperForCausalLM

    config = main_model.config
    torch.manual_seed(seed)
    assistant_config = WhisperConfig(
        vocab_size=config.vocab_size, d_model=config.d_model, decoder_layers=layers, encoder_layers=layers,
        decoder_attention_heads=config.decoder_attention_heads, encoder_attention_heads=config.encoder_attention_heads,
        decoder_ffn_dim=config.decoder_ffn_dim, encoder_ffn_dim=config.encoder_ffn_dim,
        num_mel_bins=config.num_mel_bins, max_target_positions=config.max_target_positions,
        max_source_positions=config.max_source_positions, decoder_start_token_id=config.decoder_start_token_id,
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id)
    return WhisperForCausalLM(assistant_config).eval()


def run(args) -> list[str]:
    set_threads(args.threads)
    main = load_main(args.main)
    drafters = {"quantized-self": {"mode": "quantized-self"},
                "random 2-layer assistant": {"mode": "assistant", "assistant_model": random_assistant(main.model)}}
    systems = {"plain": transcriber(main, "off", compute_type=args.compute_type)}
    for drafter, drafter_options in drafters.items():
        for schedule, options in SCHEDULES.items():
            systems[f"{drafter}, {schedule}"] = transcriber(main, **drafter_options, **options,
                                                            compute_type=args.compute_type)
    clips = manifest_clips(Path(args.audio))[: args.limit or None]
    audio = load_clips(clips)
    seconds = dict.fromkeys(systems, 0.0)
    drafted, accepted, rounds = dict.fromkeys(systems, 0), dict.fromkeys(systems, 0), dict.fromkeys(systems, 0)
    identical = dict.fromkeys(systems, True)
    reference = {}

    def record(name, index, result, taken):
        stats = result.stats
        seconds[name] += taken
        drafted[name] += stats.drafted_tokens
        accepted[name] += stats.accepted_tokens
        rounds[name] += stats.main_passes
        identical[name] &= result.tokens == reference.setdefault(index, result.tokens)

    interleave({name: system.transcribe for name, system in systems.items()}, audio, each=record,
               seconds_of=own_clock)
    lines = [f"{len(clips)} clips, {args.threads} threads, compute type {systems['plain'].compute_type}",
             "| drafter, schedule | seconds | vs plain | acceptance | draft tokens per round | identical |",
             "|---|---|---|---|---|---|"]
    for name in systems:
        ratio = seconds[name] / seconds["plain"]
        acceptance = f"{accepted[name] / drafted[name]:.0%}" if drafted[name] else ""
        per_round = f"{drafted[name] / rounds[name]:.2f}" if rounds[name] else ""
        lines.append(f"| {name} | {seconds[name]:.2f} | {ratio:.2f}x | {acceptance} | {per_round} | "
                     f"{'yes' if identical[name] else 'NO'} |")
    return lines


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.draft_schedules")
    add_common_flags(parser, repeats=False)
    parser.add_argument("--limit", type=int, default=0, help="first N clips only")
    parser.add_argument("--compute-type", default="auto")
    args = parser.parse_args(argv)
    print("\n".join(run(args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
