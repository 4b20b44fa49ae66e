"""Text-LM benchmark: per drafting mode on the real offline models, our plain vs speculative greedy decoding, and
transformers' own generate() plain vs with the same arguments (the reference to beat), on the same prompts,
interleaved prompt by prompt after a warm-up.

    python -m eval.bench.text [--max-new-tokens 48] [--repeats 1] [--num-draft-tokens 8] [--threads 2]

Modes: prompt-lookup, quantized-self (transformers: the same int8 copy as assistant_model), early-exit
(assistant_early_exit) on SmolLM2-135M; universal with Gemma 3 270M as main and SmolLM2 as assistant
(tokenizer + assistant_tokenizer). Prints one table; speedups are ratios of summed times measured in this run.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import torch

from ..paths import PROJECT_ROOT
from .cli import bench_parser
from .harness import add_common_flags, interleave, set_threads

QUOTE = PROJECT_ROOT / "samples" / "prompts" / "quote_passage.txt"
PROMPTS = {
    "quote": QUOTE.read_text(encoding="utf-8"),
    "code": ("class Point:\n    def __init__(self, x, y):\n        self.x = x\n        self.y = y\n\n"
             "    def __add__(self, other):\n        return Point(self.x + other.x, self.y + other.y)\n\n"
             "    def __sub__(self, other):\n"),
    "prose": "The printing press changed Europe because",
    "mixed": "Prices:  3.50 € and 12,000 ¥ — 😀 日本語の文章とРусский текст: 1 2 3 and then",
}


@dataclass
class Tally:
    seconds: float = 0.0
    tokens: int = 0
    drafted: int = 0
    accepted: int = 0
    passes: int = 0
    per_prompt: dict = field(default_factory=dict)  # prompt name -> seconds
    mismatches: list = field(default_factory=list)
    error: str | None = None


@dataclass
class Mode:
    """One row: a drafting mode measured both ways, each against its own plain decoding."""

    name: str
    pair: str
    ours: object  # SpeculativeLM
    hf_arguments: dict
    main: object  # LoadedLM
    tallies: dict = field(default_factory=lambda: {"ours": Tally(), "hf": Tally()})


def hf_generate(loaded, prompt_ids: list[int], max_new_tokens: int, **arguments) -> list[int]:
    ids = torch.tensor([prompt_ids])
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        output = loaded.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                       max_new_tokens=max_new_tokens, pad_token_id=loaded.tokenizer.eos_token_id,
                                       **arguments)
    return output[0, len(prompt_ids):].tolist()


def build_modes(smollm, gemma, draft_tokens: int, early_exit: int, max_new_tokens: int) -> list[Mode]:
    from asr_specdec.text import SpeculativeLM
    from asr_specdec.text.drafters.quantized_self import quantize_causal_lm

    def ours(main, mode, **settings):
        return SpeculativeLM(main, mode, max_new_tokens=max_new_tokens, num_draft_tokens=draft_tokens, **settings)

    quantized = quantize_causal_lm(smollm.model)
    modes = [
        Mode("prompt-lookup", "SmolLM2 ⟵ n-grams", ours(smollm, "prompt-lookup"),
             {"prompt_lookup_num_tokens": draft_tokens}, smollm),
        Mode("quantized-self", "SmolLM2 ⟵ its int8 copy", ours(smollm, "quantized-self"),
             {"assistant_model": quantized, "num_assistant_tokens": draft_tokens}, smollm),
        Mode("early-exit", f"SmolLM2 ⟵ its first {early_exit} layers",
             ours(smollm, "early-exit", assistant_early_exit=early_exit),
             {"assistant_early_exit": early_exit, "num_assistant_tokens": draft_tokens}, smollm),
    ]
    if gemma is not None:
        modes.append(Mode("universal", "Gemma 3 ⟵ SmolLM2", ours(gemma, "universal", assistant_model=smollm),
                          {"assistant_model": smollm.model, "tokenizer": gemma.tokenizer,
                           "assistant_tokenizer": smollm.tokenizer, "num_assistant_tokens": draft_tokens}, gemma))
    return modes


def measure(modes: list[Mode], prompts: dict, max_new_tokens: int, repeats: int) -> dict:
    """Sum times per (main model, plain) and per mode, prompt by prompt; returns the plain tallies."""
    from asr_specdec.text import SpeculativeLM

    mains = {id(mode.main): mode.main for mode in modes}
    plain = {key: (SpeculativeLM(main, "off", max_new_tokens=max_new_tokens), {"ours": Tally(), "hf": Tally()})
             for key, main in mains.items()}
    for lm, _ in plain.values():  # warm-up: first calls pay one-off allocation costs
        lm.generate("Hello", max_new_tokens=4)
    for mode in modes:
        mode.ours.generate("Hello", max_new_tokens=4)
        hf_generate(mode.main, mode.ours.encode("Hello"), 4, **mode.hf_arguments)
    # transformers is given the prompt ids our generate() encodes (SpeculativeLM.encode, its prompt_tokens)
    prompt_ids = {key: {name: lm.encode(prompt) for name, prompt in prompts.items()} for key, (lm, _) in plain.items()}
    systems, tallies, expected = {}, {}, {}
    for key, (lm, plain_tallies) in plain.items():
        systems[key, "ours"] = lambda name, lm=lm: lm.generate(prompts[name])
        systems[key, "hf"] = lambda name, key=key: hf_generate(mains[key], prompt_ids[key][name], max_new_tokens)
        tallies[key, "ours"], tallies[key, "hf"] = plain_tallies["ours"], plain_tallies["hf"]
    for mode in modes:
        key = id(mode.main)
        systems[mode.name, "ours"] = lambda name, mode=mode: mode.ours.generate(prompts[name])
        systems[mode.name, "hf"] = lambda name, mode=mode, key=key: hf_generate(
            mode.main, prompt_ids[key][name], max_new_tokens, **mode.hf_arguments)
        tallies[mode.name, "ours"], tallies[mode.name, "hf"] = mode.tallies["ours"], mode.tallies["hf"]
        expected[mode.name] = key
    reference = {}

    def record(system, index, output, seconds):
        name, side = system
        prompt_name = list(prompts)[index]
        if name in plain:  # the main model's plain decoding: the reference of its modes
            if side == "ours":
                reference[name] = output.tokens
                add(tallies[system], seconds, output, prompt_name=prompt_name)
            else:
                add(tallies[system], seconds, None, output, reference[name], prompt_name)
        elif side == "ours":
            add(tallies[system], seconds, output, output.tokens, reference[expected[name]], prompt_name)
        else:
            add(tallies[system], seconds, None, output, reference[expected[name]], prompt_name)

    # report what transformers refuses instead of stopping the bench
    rounds = interleave(systems, list(prompts), repeats, warm_up=False, each=record,
                        catch=[(mode.name, "hf") for mode in modes])
    for (name, side), error in rounds.errors.items():
        tallies[name, side].error = error
    return {key: tallies for key, (_, tallies) in plain.items()}


def add(tally: Tally, seconds: float, result=None, tokens=None, expected=None, prompt_name: str = "") -> None:
    tally.seconds += seconds
    tally.per_prompt[prompt_name] = tally.per_prompt.get(prompt_name, 0.0) + seconds
    if result is not None:
        stats = result.stats
        tally.tokens += stats.new_tokens
        tally.drafted += stats.drafted_tokens
        tally.accepted += stats.accepted_tokens
        tally.passes += stats.main_passes
    elif tokens is not None:
        tally.tokens += len(tokens)
    if expected is not None and tokens != expected:
        tally.mismatches.append(prompt_name)


def table(modes: list[Mode], plain: dict, runs: int) -> list[str]:
    lines = [
        "| mode | main ⟵ drafter | our plain s | our speculative s | our speedup | acceptance | tokens/main pass | "
        "identical | transformers plain s | transformers assisted s | transformers speedup | identical | "
        "ours vs transformers assisted | our speedup per prompt |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for mode in modes:
        ours, theirs = mode.tallies["ours"], mode.tallies["hf"]
        ours_plain, hf_plain = plain[id(mode.main)]["ours"], plain[id(mode.main)]["hf"]
        acceptance = f"{ours.accepted / ours.drafted:.0%}" if ours.drafted else "-"
        per_pass = f"{ours.tokens / ours.passes:.2f}" if ours.passes else "-"
        row = (f"| {mode.name} | {mode.pair} | {ours_plain.seconds:.1f} | {ours.seconds:.1f} | "
               f"{ours_plain.seconds / ours.seconds:.2f}x | {acceptance} | {per_pass} | {identical(ours, runs)} | "
               f"{hf_plain.seconds:.1f} | ")
        if theirs.error:
            row += f"failed: {theirs.error} | | | |"
        else:
            row += (f"{theirs.seconds:.1f} | {hf_plain.seconds / theirs.seconds:.2f}x | {identical(theirs, runs)} | "
                    f"{theirs.seconds / ours.seconds:.2f}x |")
        per_prompt = ", ".join(f"{name} {ours_plain.per_prompt[name] / seconds:.2f}x"
                               for name, seconds in ours.per_prompt.items())
        lines.append(f"{row} {per_prompt} |")
    for tallies in plain.values():
        if tallies["hf"].mismatches:
            lines.append(f"transformers' plain generate differs from our plain loop on: {tallies['hf'].mismatches}")
    return lines


def identical(tally: Tally, runs: int) -> str:
    return "yes" if not tally.mismatches else f"NO ({len(tally.mismatches)}/{runs}: {', '.join(tally.mismatches)})"


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.text")
    add_common_flags(parser, main=False, audio=False)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--num-draft-tokens", type=int, default=8)
    parser.add_argument("--early-exit-layer", type=int, default=8, help="of SmolLM2's 30 layers")
    parser.add_argument("--no-universal", action="store_true", help="skip Gemma 3 (slow to convert and load)")
    parser.add_argument("--prompts", nargs="*", default=list(PROMPTS), choices=list(PROMPTS))
    args = parser.parse_args(argv)

    from asr_specdec.weights.text_models import load_causal_lm

    set_threads(args.threads)
    smollm = load_causal_lm("smollm2-135m")
    gemma = None if args.no_universal else load_causal_lm("gemma3-270m")
    modes = build_modes(smollm, gemma, args.num_draft_tokens, args.early_exit_layer, args.max_new_tokens)
    load_before = os.getloadavg()[0]
    plain = measure(modes, {name: PROMPTS[name] for name in args.prompts}, args.max_new_tokens, args.repeats)
    print(f"torch {torch.__version__}, {args.threads} threads, {os.cpu_count()} CPUs, load average "
          f"{load_before:.1f} before / {os.getloadavg()[0]:.1f} after; {len(args.prompts)} prompts x "
          f"{args.repeats} repeats, up to {args.max_new_tokens} new tokens, {args.num_draft_tokens} draft tokens")
    print("\n".join(table(modes, plain, len(args.prompts) * args.repeats)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
