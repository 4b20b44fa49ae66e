"""Every size people run, on random weights: ours at each compute type (plain and the default mode) beside
faster-whisper int8 on the same CTranslate2 folder, at the shapes of small, medium, large-v3-turbo and large-v3;
and large-v3 with a distil-large-v3-shaped assistant: its draft step, its verification and the speed-up it would
give by acceptance.

    python -m eval.bench.sizes [--shapes small,medium,large-v3-turbo,large-v3] [--repeats 3]
                               [--threads 2] [--compute-types int8,auto] [--default-mode-types int8,auto]
                               [--tokens 100] [--draft-tokens 5]
                               [--skip memory,pair] [--json sizes.json]

The folders are eval/bench/size_models.py's (built and cached on first use: minutes, and ~7 GB of memory for
large-v3). Every call is a 30-s window of seeded noise (another for each call), greedy, no timestamps, no VAD,
temperature 0 only, with the end of text suppressed so that exactly `--tokens` tokens are made (faster-whisper:
`suppress_tokens=[-1, end]`, `max_new_tokens`, scaled until it makes that many: see requested_for; ours through its
drop-in `WhisperModel`, the same arguments; the table shows the counts made). The systems take turns, best of
`--repeats`. "ms a token" is the difference between a call of 2 x tokens and one of tokens, per token: the decoder's
own cost, whatever the encoder and features cost; each call counted less the time it spent in its own encoder
(faster-whisper's `encode`, ours' pipeline encoder, clocked around the call: EncoderClock), so that the encoder's
run-to-run noise (a tenth of a second on a 4-s turbo window, a millisecond a token over 100) stays out of it.
The encoder is one 30-s window, features given. Memory: each
system alone in a fresh process (eval/bench/size_probe.py): the peak while loading, the resident set after one whole
call; ours' first load with an empty model cache (it converts the folder then).

The pair (needs large-v3 in --shapes; distil-large-v3's folder is built when missing): the main step (one token and
its greedy choice at position ~60), the assistant's step, and the verification of draft-tokens + 1 tokens, each at
every compute type of ours. The projection takes acceptance as each drafted token's chance to pass, independent of
the others: a round of k drafts then yields (1 - a^(k+1)) / (1 - a) tokens for k draft steps and one verification,
and a call is ours' plain call less its decoder tokens (encoder and features, measured above) plus tokens / yield
rounds. The speed-up is faster-whisper int8's whole call over that. Random weights draft nothing useful: acceptance
here is an input, not a measurement.

Speed does not depend on weight values, so the times carry over to the real models; the text does, and these
weights say nothing about accuracy. One caveat: random weights give flat vocabulary scores, on which ours' certified
greedy choice (core/argmax.py) rescores more candidates than real speech makes it, so ours' token may cost a
little more here than on real weights.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np

from ..cli_args import OneLineParser
from .cli import bench_parser
from .size_models import SHAPES, ensure_size_model

ACCEPTANCES = (0.6, 0.7, 0.8, 0.9)
TARGET_SPEEDUPS = (2.0, 3.0)
SAMPLE_RATE = 16000
NOISE_SEED = 49
END_OF_TEXT = 50257  # the same id in every Whisper tokenizer
MAX_REQUEST = 440  # Whisper's 448 positions less the prompt
DEFAULT_SHAPES = ("small", "medium", "large-v3-turbo", "large-v3")  # distil-large-v3 is the pair's assistant


def kernel_build() -> str:
    """Which kernel build ran, and what `auto` is at each width measured here (the ratios depend on both)."""
    from asr_specdec.native import capabilities
    from asr_specdec.whisper.runtime.compute import auto_compute_type

    widths = sorted({shape.d_model for shape in SHAPES.values()})
    autos = ", ".join(f"{width} wide {auto_compute_type('cpu', width)}" for width in widths)
    return f"kernel build {capabilities().isa}; auto: {autos}"


# ---------------------------------------------------------------------------------------------------- systems

def build_system(system: str, folder: str, compute_type: str | None, mode: str | None, threads: int):
    """faster-whisper's WhisperModel ("faster-whisper") or our drop-in one ("ours") on a CTranslate2 folder."""
    if system == "faster-whisper":
        from faster_whisper import WhisperModel

        return WhisperModel(folder, device="cpu", compute_type=compute_type, cpu_threads=threads, num_workers=1)
    from asr_specdec.compat import WhisperModel

    return WhisperModel(folder, device="cpu", compute_type=compute_type, cpu_threads=threads, mode=mode)


def variant(model, compute_type: str, mode: str | None):
    """Our drop-in `model` at another compute type or mode, on the same loaded weights (one float copy in memory,
    not one per system)."""
    from asr_specdec.compat import WhisperModel
    from asr_specdec.whisper import SpeculativeWhisper

    speculative = model.speculative
    options = replace(speculative.model_options, main=speculative.loaded(), processor=None, drafter=None, mode=mode,
                      compute_type=compute_type)
    return WhisperModel.around(SpeculativeWhisper.from_options(options, speculative.options))


def forced_call(model, samples: np.ndarray, tokens: int, end_of_text: int = END_OF_TEXT) -> int:
    """One greedy call on one window that cannot end before `tokens` tokens; how many it made."""
    segments, _ = model.transcribe(samples, language="en", beam_size=1, temperature=0.0, vad_filter=False,
                                   without_timestamps=True, condition_on_previous_text=False,
                                   no_speech_threshold=None, suppress_tokens=[-1, end_of_text],
                                   max_new_tokens=tokens)
    return sum(len(segment.tokens) for segment in segments)


def requested_for(model, windows, tokens: int) -> int:
    """The `max_new_tokens` at which `model` makes exactly `tokens` tokens. Ours makes what it is asked for;
    faster-whisper's CTranslate2 build stopped at about half of it on these weights (52 tokens when asked for 100,
    the end of text suppressed), so its request is scaled until the count is right (a few calls at most)."""
    requested = tokens
    for _ in range(4):
        made = forced_call(model, windows(), requested)
        if made == tokens or made == 0:
            break
        requested = min(MAX_REQUEST, max(1, round(requested * tokens / made)))
    return requested


def noise(seconds: float = 30.0, seed: int = NOISE_SEED) -> np.ndarray:
    return (0.1 * np.random.default_rng(seed).standard_normal(int(seconds * SAMPLE_RATE))).astype(np.float32)


class FreshWindows:
    """Another window of noise for each call (the same sequence for every system): ours keeps a call's encoding
    for the next call of the same audio (a fallback retry decodes it again, pipeline.py `_encode`), so calls on
    one window would time its encoder once and every later call without it."""

    def __init__(self):
        self.calls = 0

    def __call__(self) -> np.ndarray:
        self.calls += 1
        return noise(seed=NOISE_SEED + self.calls)


def best_of(function, repeats: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


@dataclass
class Timing:
    """One system's times on one shape (seconds)."""

    encoder: float = float("inf")
    whole: float = float("inf")  # a call of `tokens` tokens
    double: float = float("inf")  # a call of 2 x `tokens` tokens
    made: list = field(default_factory=list)  # the token counts the two calls made
    whole_decoding: float = float("inf")  # the call of `tokens` tokens less its time in the encoder
    double_decoding: float = float("inf")  # the same of the call of 2 x `tokens`

    def per_token(self, tokens: int) -> float:
        """Seconds a decoder token costs: the longer call's extra time (each call less its own encoder time) over its
        extra tokens (`tokens` when the calls made what they were asked for)."""
        extra = self.made[1] - self.made[0] if len(self.made) == 2 and self.made[1] > self.made[0] else tokens
        return (self.double_decoding - self.whole_decoding) / extra


class EncoderClock:
    """The seconds a system's calls spend in its encoder (faster-whisper's `encode`, ours' pipeline encoder), its
    entry point wrapped in place; `seconds` is reset by the caller before a call and read after it."""

    def __init__(self, model):
        self.seconds = 0.0
        if hasattr(model, "speculative"):
            pipeline = model.speculative.pipeline
            pipeline.encoder = _Clocked(pipeline.encoder, self)
        else:
            model.encode = _Clocked(model.encode, self)


class _Clocked:
    """`function` with its time added to `clock.seconds`; its attributes read through."""

    def __init__(self, function, clock: EncoderClock):
        self._function, self._clock = function, clock

    def __call__(self, *arguments, **keywords):
        started = time.perf_counter()
        try:
            return self._function(*arguments, **keywords)
        finally:
            self._clock.seconds += time.perf_counter() - started

    def __getattr__(self, name: str):
        return getattr(self._function, name)


def _encoder(model, samples: np.ndarray):
    """A function running `model`'s encoder on one 30-s window of `samples`' features."""
    if hasattr(model, "speculative"):
        import torch

        pipeline = model.speculative.pipeline
        features = pipeline.features(samples)

        def ours():
            with torch.inference_mode():
                return pipeline.encoder(features)
        return ours
    from faster_whisper.audio import pad_or_trim

    features = pad_or_trim(model.feature_extractor(samples))
    return lambda: model.encode(features)


def time_systems(systems: dict, samples: np.ndarray, tokens: int, repeats: int) -> dict[str, Timing]:
    """Each system's encoder and whole calls, the systems taking turns, best of `repeats`."""
    timings = {name: Timing() for name in systems}
    encoders = {name: _encoder(model, samples) for name, model in systems.items()}
    clocks = {name: EncoderClock(model) for name, model in systems.items()}
    requests = {}
    windows = {name: FreshWindows() for name in systems}
    for name, model in systems.items():  # also the warm-up: packs, kernels, first-call allocations
        requests[name] = (requested_for(model, windows[name], tokens),
                          requested_for(model, windows[name], 2 * tokens))
        encoders[name]()
    for _ in range(repeats):
        for name, model in systems.items():
            timing, (single, double) = timings[name], requests[name]
            timing.encoder = min(timing.encoder, best_of(encoders[name], 1)[0])
            made = []
            for request, whole, decoding in ((single, "whole", "whole_decoding"),
                                             (double, "double", "double_decoding")):
                clocks[name].seconds = 0.0
                seconds, count = best_of(partial(forced_call, model, windows[name](), request), 1)
                setattr(timing, whole, min(getattr(timing, whole), seconds))
                setattr(timing, decoding, min(getattr(timing, decoding), seconds - clocks[name].seconds))
                made.append(count)
            timing.made = made
    return timings


def speed_section(shape: str, folder: Path, args) -> tuple[dict[str, Timing], dict]:
    systems = {"faster-whisper int8": build_system("faster-whisper", str(folder), "int8", None, args.threads)}
    loaded = build_system("ours", str(folder), args.compute_types[0], "off", args.threads)
    runs = [(compute, "off", "plain") for compute in args.compute_types]
    runs += [(compute, None, "default mode") for compute in args.default_mode_types]
    for compute, mode, label in runs:
        model = variant(loaded, compute, mode)
        chosen = f" ({model.speculative.mode})" if mode is None else ""  # the mode the default resolved to
        systems[f"ours {compute} ({model.speculative.compute_type}), {label}{chosen}"] = model
    return time_systems(systems, noise(), args.tokens, args.repeats), systems


def speed_rows(shape: str, timings: dict[str, Timing], tokens: int) -> list[str]:
    reference = timings["faster-whisper int8"]
    rows = [f"| {shape} | system | encoder, 30-s window | ms a token | whole call, {tokens} tokens | "
            "vs faster-whisper int8 (whole / encoder / token) | tokens made |", "|---|---|---|---|---|---|---|"]
    for name, timing in timings.items():
        ratios = (f"{reference.whole / timing.whole:.2f}x / {reference.encoder / timing.encoder:.2f}x / "
                  f"{reference.per_token(tokens) / timing.per_token(tokens):.2f}x")
        made = "" if timing.made == [tokens, 2 * tokens] else f"{timing.made[0]}, {timing.made[1]} (not forced!)"
        rows.append(f"| | {name} | {timing.encoder:.2f} s | {timing.per_token(tokens) * 1e3:.1f} | "
                    f"{timing.whole:.2f} s | {ratios} | {made or f'{tokens}, {2 * tokens}'} |")
    return rows


# ---------------------------------------------------------------------------------------------------- memory

def memory_section(folder: Path, args) -> dict[str, dict]:
    from .size_probe import measure

    with tempfile.TemporaryDirectory(prefix="asr_specdec-sizes-") as scratch:
        audio = Path(scratch) / "noise.npy"
        np.save(audio, noise())
        common = {"folder": str(folder), "audio": str(audio), "tokens": args.tokens, "threads": args.threads,
                  "end_of_text": END_OF_TEXT}
        probes = {"faster-whisper int8": {"system": "faster-whisper", "compute_type": "int8"}}
        probes.update({f"ours {compute}": {"system": "ours", "compute_type": compute}
                       for compute in args.compute_types})
        probes[f"ours {args.compute_types[-1]}, first load"] = {"system": "ours",
                                                               "compute_type": args.compute_types[-1],
                                                               "fresh_cache": True}
        return {name: measure({**common, **probe}) for name, probe in probes.items()}


def memory_rows(shape: str, measured: dict[str, dict]) -> list[str]:
    rows = [f"| {shape} | system | load peak | resident after a call | peak |", "|---|---|---|---|---|"]
    for name, answer in measured.items():
        if "error" in answer:
            rows.append(f"| | {name} | {answer['error']} | | |")
        else:
            rows.append(f"| | {name} | {answer['load_peak_mib']:.0f} MiB | {answer['rss_after_call_mib']:.0f} MiB | "
                        f"{answer['peak_mib']:.0f} MiB |")
    return rows


# ---------------------------------------------------------------------------------------------------- the pair

def rounds_yield(acceptance: float, draft_tokens: int) -> float:
    """Tokens a round of `draft_tokens` drafts makes when each passes with `acceptance`, independently."""
    if acceptance >= 1.0:
        return draft_tokens + 1.0
    return (1.0 - acceptance ** (draft_tokens + 1)) / (1.0 - acceptance)


def projected_speedup(acceptance: float, costs: dict, draft_tokens: int, tokens: int, fixed: float,
                      reference: float) -> float:
    round_cost = draft_tokens * costs["draft_step"] + costs["verification"]
    return reference / (fixed + tokens / rounds_yield(acceptance, draft_tokens) * round_cost)


def acceptance_for(target: float, speedup) -> float | None:
    """The least acceptance at which `speedup(acceptance)` (increasing) reaches `target`; None if not even at 1."""
    if speedup(1.0) < target:
        return None
    low, high = 0.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if speedup(middle) < target else (low, middle)
    return high


def pass_costs(main_folder: Path, assistant_folder: Path, compute: str, draft_tokens: int, repeats: int,
               threads: int) -> dict:
    """Seconds of the main step, the assistant's step and the verification of draft_tokens + 1 tokens (each a
    decoder pass and its greedy choices) at compute type `compute`, after a prefix of 60 tokens."""
    import torch

    from asr_specdec.weights.whisper_models import resolve_model_dir
    from asr_specdec.whisper.drafters import AssistantDrafter
    from asr_specdec.whisper.runtime.decoder import drafting_formats
    from asr_specdec.whisper.runtime.lean_model import load_lean_whisper

    main = build_system("ours", str(main_folder), compute, "off", threads).speculative
    pipeline = main.pipeline
    assistant = load_lean_whisper(resolve_model_dir(str(assistant_folder)))
    drafter = AssistantDrafter(assistant, pipeline.model, **drafting_formats(assistant))  # as mode=assistant builds it
    prompt = main.tokens.prompt(main.tokens.language_ids["<|en|>"], "transcribe", False)
    prefix = prompt + [1000 + 37 * index % 20000 for index in range(60)]
    following = [500 + 11 * index for index in range(draft_tokens + 1)]
    with torch.inference_mode():
        encoded = pipeline.encoder(pipeline.features(noise()))
        runners = {"main_step": pipeline.runner, "draft_step": drafter.runner, "verification": pipeline.runner}
        passes = {}
        for name, runner in runners.items():
            cache = runner.new_cache(encoded)
            runner.feed_rows(cache, [prefix], [0])
            fed = following if name == "verification" else following[:1]

            def one_pass(runner=runner, cache=cache, fed=fed):
                hidden = runner.feed_rows(cache, [fed], [len(prefix)])[0]
                return runner.greedy_choices(hidden, None)
            one_pass()
            passes[name] = one_pass
        return interleaved_best(passes, 10 * repeats)


def interleaved_best(passes: dict, rounds: int) -> dict[str, float]:
    """The best seconds of each pass over `rounds` rounds that run every pass once in turn: this VM's speed drifts
    by 10-20% over a minute, and passes timed one after the other (main step, then draft, then verification) put
    that drift into their ratios."""
    best = dict.fromkeys(passes, float("inf"))
    for _ in range(rounds):
        for name, one_pass in passes.items():
            best[name] = min(best[name], best_of(one_pass, 1)[0])
    return best


def fixed_part(whole: float, costs: dict, tokens: int) -> float:
    """What a plain call of `tokens` tokens spends on anything but its decoder steps (features, encoder, cross
    states, the prompt): the call less its tokens at the main step's cost measured in turn with the other passes.
    Not less `tokens` x "ms a token": that difference of two whole calls swung 29-43 ms at large-v3 between two
    configurations that were the same, and put the fixed part below the encoder's own time."""
    return whole - tokens * costs["main_step"]


def pair_section(timings: dict[str, Timing], args) -> dict:
    main_folder, assistant_folder = ensure_size_model("large-v3"), ensure_size_model("distil-large-v3")
    reference = timings["faster-whisper int8"].whole
    result = {}
    for compute in args.compute_types:
        plain = next(timing for name, timing in timings.items() if name.startswith(f"ours {compute} (")
                     and name.endswith("plain"))
        costs = pass_costs(main_folder, assistant_folder, compute, args.draft_tokens, args.repeats, args.threads)
        fixed = fixed_part(plain.whole, costs, args.tokens)

        def speedup(acceptance, costs=costs, fixed=fixed):
            return projected_speedup(acceptance, costs, args.draft_tokens, args.tokens, fixed, reference)
        result[compute] = {"costs_s": costs, "fixed_s": fixed,
                           "speedup_by_acceptance": {str(a): speedup(a) for a in ACCEPTANCES},
                           "acceptance_for": {str(t): acceptance_for(t, speedup) for t in TARGET_SPEEDUPS}}
    return result


def pair_rows(pair: dict, draft_tokens: int, tokens: int) -> list[str]:
    head = " | ".join(f"a = {a}" for a in ACCEPTANCES)
    reached = " | ".join(f"{t:g}x at a =" for t in TARGET_SPEEDUPS)
    rows = [f"| large-v3 ⟵ distil-large-v3 | main step | draft step (/ main) | verification of {draft_tokens + 1} "
            f"(/ main) | {head} | {reached} |", "|---" * (4 + len(ACCEPTANCES) + len(TARGET_SPEEDUPS)) + "|"]
    for compute, entry in pair.items():
        costs = entry["costs_s"]
        main = costs["main_step"]
        speedups = " | ".join(f"{entry['speedup_by_acceptance'][str(a)]:.2f}x" for a in ACCEPTANCES)
        needed = " | ".join("not reached" if (a := entry["acceptance_for"][str(t)]) is None else f"{a:.2f}"
                            for t in TARGET_SPEEDUPS)
        rows.append(f"| ours {compute} | {main * 1e3:.1f} ms | {costs['draft_step'] * 1e3:.1f} ms "
                    f"({costs['draft_step'] / main:.2f}) | {costs['verification'] * 1e3:.1f} ms "
                    f"({costs['verification'] / main:.2f}) | {speedups} | {needed} |")
    rows.append(f"(projected whole {tokens}-token call over faster-whisper int8's, {draft_tokens} drafts a round: the "
                f"plain call less its {tokens} tokens at the main step, plus their rounds)")
    return rows


# ---------------------------------------------------------------------------------------------------- main

def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.sizes", OneLineParser)
    parser.add_argument("--shapes", default=",".join(DEFAULT_SHAPES), help=f"of {', '.join(SHAPES)}")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--compute-types", default="int8,auto", help="ours', comma-separated")
    parser.add_argument("--default-mode-types", default=None,
                        help="the compute types ours also runs in its default mode (speculative), comma-separated; "
                             "default: every --compute-types")
    parser.add_argument("--tokens", type=int, default=100)
    parser.add_argument("--draft-tokens", type=int, default=5)
    parser.add_argument("--skip", default="", help="sections to leave out: memory, pair")
    parser.add_argument("--json", default="", help="also write the results to this file")
    args = parser.parse_args(argv)
    shapes = [name.strip() for name in args.shapes.split(",") if name.strip()]
    if unknown := [name for name in shapes if name not in SHAPES]:
        parser.error(f"unknown shape(s) {', '.join(unknown)} (known: {', '.join(SHAPES)})")
    skip = {name.strip() for name in args.skip.split(",") if name.strip()}
    if unknown := skip - {"memory", "pair"}:
        parser.error(f"unknown section(s) in --skip: {', '.join(sorted(unknown))} (memory, pair)")
    for number, name in (("--repeats", args.repeats), ("--tokens", args.tokens), ("--draft-tokens", args.draft_tokens),
                         ("--threads", args.threads)):
        if name < 1:
            parser.error(f"{number} must be at least 1")
    args.compute_types = [name.strip() for name in args.compute_types.split(",") if name.strip()]
    if not args.compute_types:
        parser.error("--compute-types names none")
    args.default_mode_types = args.compute_types if args.default_mode_types is None else \
        [name.strip() for name in args.default_mode_types.split(",") if name.strip()]

    import torch

    torch.set_num_threads(args.threads)
    print(f"# sizes on random weights: {args.threads} threads, {args.tokens} and {2 * args.tokens} tokens forced, "
          f"best of {args.repeats}; {kernel_build()}\n", flush=True)
    results: dict = {"settings": {key: value for key, value in vars(args).items() if key != "json"}, "shapes": {}}
    timed = {}
    for shape in shapes:
        folder = ensure_size_model(shape)
        timings, systems = speed_section(shape, folder, args)
        del systems
        timed[shape] = timings
        entry = results["shapes"][shape] = {"folder": str(folder), "timings": {
            name: {"encoder_s": t.encoder, "whole_s": t.whole, "double_s": t.double,
                   "whole_less_encoder_s": t.whole_decoding, "double_less_encoder_s": t.double_decoding,
                   "ms_per_token": t.per_token(args.tokens) * 1e3, "tokens_made": t.made}
            for name, t in timings.items()}}
        print("\n".join(speed_rows(shape, timings, args.tokens)) + "\n", flush=True)
        if "memory" not in skip:
            entry["memory_mib"] = memory_section(folder, args)
            print("\n".join(memory_rows(shape, entry["memory_mib"])) + "\n", flush=True)
    if "pair" not in skip and "large-v3" in shapes:
        results["pair"] = pair_section(timed["large-v3"], args)
        print("\n".join(pair_rows(results["pair"], args.draft_tokens, args.tokens)), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
