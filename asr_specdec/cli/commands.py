"""What every command line shares: one line on stderr for Ctrl-C and for bugs, and the telemetry line."""

from __future__ import annotations

import sys
import time


def add_compute_type_arguments(parser) -> None:
    """--compute-type and its older spelling --dtype, as transcribe and serve take them."""
    parser.add_argument("--compute-type", default=None, metavar="TYPE",
                        help="precision of the main model's encoder and decoder: float32, bfloat16, float16 (CUDA), "
                             "int8, auto, or ENCODER:DECODER such as int8:float32 (default auto: see README)")
    parser.add_argument("--dtype", choices=("auto", "float32", "float16", "bfloat16"), default="auto",
                        help="older spelling of --compute-type (one precision for both halves)")


def format_stats(stats, label: str) -> str:
    return (f"{label}: {stats.new_tokens} tokens in {stats.total_seconds:.2f} s "
            f"(encoder {stats.encoder_seconds:.2f} s, draft {stats.draft_seconds:.2f} s, verify "
            f"{stats.verify_seconds:.2f} s); drafted {stats.drafted_tokens}, accepted {stats.accepted_tokens} "
            f"({stats.acceptance_rate:.0%}); {stats.tokens_per_main_pass:.2f} tokens per main pass, "
            f"{stats.main_passes} main passes, {stats.draft_passes} drafter passes"
            + (f"; {stats.beam_steps} beam steps ({stats.beam_steps_per_main_pass:.2f} per main pass)"
               if stats.beam_steps else ""))


def error_line(error: Exception, parser) -> str:
    """A user error's one line in the command line's words: an option refused by its options object (OptionError,
    named by its Python keyword) is named by the flag that sets it (`{name=value}`: "--flag value")."""
    from ..errors import OptionError
    from .recipe_arguments import FLAG_DESTS

    if not isinstance(error, OptionError):
        return str(error)
    flags = {action.dest: max(action.option_strings, key=len) for action in parser._actions if action.option_strings}

    def flag(name: str) -> str:
        key, _, value = name.partition("=")
        return f"{flags.get(FLAG_DESTS.get(key, key), key)} {value}".strip()

    return error.in_words(flag)


def run_command(run, args, interrupted: str) -> int:
    """`run(args)` as a command: Ctrl-C and even a bug give one line on stderr and an exit code, never a
    traceback; --stats adds the total wall time."""
    started = time.perf_counter()
    try:
        code = run(args)
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr)
        return 130
    except Exception as error:  # a bug still gets one line, not a traceback
        print(f"error: unexpected {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    if args.stats:
        print(f"total wall time {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return code
