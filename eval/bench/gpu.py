"""The GPU benchmark: per-pass costs of a random-weight model with large-v3's dimensions and of a 2-layer
decoder-only assistant shaped as distil-large-v3; the shared clips with a real model, plain against speculative,
in float16; and the large-v3 ⟵ distil-large-v3 speed-up those costs project.

    python -m eval.bench.gpu                                   # CUDA when there is one, float16
    python -m eval.bench.gpu --tiny --device cpu --clips 2     # tiny shapes on a CPU: checks that it all runs
    python -m eval.bench.gpu --smoke                           # every user path on the device, one line each

Passes are timed on the device (synchronised), median of --repeats after a warm-up, on random weights: their
cost does not depend on the values (on the PyTorch path a GPU takes; the CPU's certified argmax does, so CPU pass
costs here are not those of real weights). The projection assumes each draft token is accepted with the same
probability `a`, independently (Leviathan et al. 2023): a round of k drafts yields (1 - a^(k+1)) / (1 - a)
tokens for k draft steps and one verification of k + 1 tokens. Distil-Whisper (Gandhi, von Platen & Rush 2023,
arXiv:2311.00430) reports a 2x speed-up of Whisper with its distilled model as assistant, not a per-token
acceptance: the projection is tabled over acceptances, with the acceptance at which these costs give 2x.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch

from .cli import bench_parser
from .harness import add_common_flags, interleave, load_clips, manifest_clips, set_threads, timed, transcriber
from .ops import count_operations

# openai/whisper-large-v3's config.json; distil-large-v3 keeps its encoder and has 2 decoder layers
LARGE_V3 = {"d_model": 1280, "encoder_layers": 32, "decoder_layers": 32, "encoder_attention_heads": 20,
            "decoder_attention_heads": 20, "encoder_ffn_dim": 5120, "decoder_ffn_dim": 5120, "num_mel_bins": 128,
            "vocab_size": 51866, "max_source_positions": 1500, "max_target_positions": 448}
TINY = {**LARGE_V3, "d_model": 64, "encoder_layers": 2, "decoder_layers": 4, "encoder_attention_heads": 4,
        "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128}
ASSISTANT_LAYERS = 2
PAPER_SPEEDUP = 2.0  # Distil-Whisper's abstract: "a 2 times speed-up" as Whisper's assistant
ACCEPTANCES = (0.6, 0.7, 0.8, 0.9)
PREFIX, VERIFIED = 30, 9  # a step at position 30 of the transcript; a verification of 8 drafts + 1


def random_whisper(shape: dict, device: str, dtype: torch.dtype, decoder_layers: int | None = None,
                   decoder_only: bool = False):
    """A Whisper of `shape` with random weights (the lean model's module tree: what the runners read)."""
    from asr_specdec.whisper.runtime.lean_model import LeanWhisper, Settings

    config = Settings({**shape, "decoder_layers": decoder_layers or shape["decoder_layers"]})
    with torch.device(device):
        model = LeanWhisper(config, Settings({}))
    if decoder_only:
        del model.model.encoder  # as WhisperForCausalLM: it reads the main model's encoder output
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() >= 2:  # embeddings start uninitialised; linear layers get a Whisper-like scale
                parameter.normal_(0.0, 0.02)
    model.proj_out.weight = model.model.decoder.embed_tokens.weight
    return model.to(dtype).eval()


def median_seconds(function, repeats: int, device: str) -> float:
    """Median wall time of `function()` over `repeats` calls after one warm-up, waiting for the device each time."""
    def synchronize():
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)

    def run():
        function()
        synchronize()

    run()
    return statistics.median(timed(run)[1] for _ in range(repeats))


ROWS = (1, 4, 16)  # batched passes: rows decoded together (a beam search of 5 is a 5-row step)
BEAM = 5


def pass_costs(shape: dict, device: str, dtype: torch.dtype, repeats: int) -> dict[str, dict]:
    """Per pass: seconds, the aten operations it dispatches, and its floor: weight bytes over the device's copy
    bandwidth (measured in the same run), and on CUDA the pass's weight products replayed from one CUDA graph.
    Passes: one encoder window, one main decoder step (+ greedy choice) and one verification of 9 tokens at
    1, 4 and 16 rows, a beam-5 step (5 rows), one draft step of the 2-layer decoder-only assistant."""
    from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner
    from asr_specdec.whisper.runtime.encoder import EncoderRunner

    precision = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}[dtype]
    main = random_whisper(shape, device, dtype)
    assistant = random_whisper(shape, device, dtype, ASSISTANT_LAYERS, decoder_only=True)
    generator = torch.Generator(device="cpu").manual_seed(0)
    features = torch.randn(1, shape["num_mel_bins"], 2 * shape["max_source_positions"], generator=generator)
    tokens = torch.randint(0, shape["vocab_size"] - 1600, (PREFIX + VERIFIED,), generator=generator).tolist()
    prefix, following = tokens[:PREFIX], tokens[PREFIX:]
    bandwidth = copy_bandwidth(device)
    passes = [("main step", main, 1, 1), ("verification of 9 tokens", main, VERIFIED, 1)]
    passes += [(f"{name}, {rows} rows", main, fed, rows) for rows in ROWS[1:]
               for name, fed in (("main step", 1), ("verification of 9 tokens", VERIFIED))]
    passes += [(f"beam {BEAM} step ({BEAM} rows)", main, 1, BEAM), ("draft step", assistant, 1, 1)]
    costs = {}
    with torch.inference_mode():
        encoder = EncoderRunner(main.model.encoder, precision)
        features = features.to(device)
        progress("encoder, one 30-s window")
        seconds = median_seconds(lambda: encoder(features), repeats, device)
        costs["encoder, one 30-s window"] = {"seconds": seconds, "bytes": weight_bytes(main.model.encoder)}
        encoded = encoder(features)
        for name, model, fed, rows in passes:
            progress(name)
            runner = WhisperDecoderRunner(model)
            cache = runner.new_cache(encoded.expand(rows, -1, -1))
            runner.feed_rows(cache, [prefix] * rows, [0] * rows)

            def step(runner=runner, cache=cache, fed=fed, rows=rows):
                hidden = torch.cat(runner.feed_rows(cache, [following[:fed]] * rows, [PREFIX] * rows))
                return runner.greedy_choices(hidden, None)

            linears = [part for block in [*runner.layers, runner.proj_out] for part in block.modules()
                       if isinstance(part, torch.nn.Linear)]
            costs[name] = {"seconds": median_seconds(step, repeats * (4 if fed == 1 else 2), device),
                           "operations": sum(count_operations(step).values()),
                           "bytes": sum(weight_bytes(linear) for linear in linears),
                           "graph": graph_floor(linears, rows * fed, device, dtype, repeats)}
    for cost in costs.values():
        cost["bandwidth"] = cost["bytes"] / bandwidth
    return costs


def progress(name: str) -> None:
    """A line on stderr as each pass starts (on a CPU a large-v3-shaped pass takes a while)."""
    print(f"timing: {name}", file=sys.stderr, flush=True)


def weight_bytes(module: torch.nn.Module) -> int:
    return sum(parameter.numel() * parameter.element_size() for parameter in module.parameters())


def copy_bandwidth(device: str) -> float:
    """Bytes per second a device-to-device copy moves (read + write), the best of a few."""
    size = (256 if device.startswith("cuda") else 64) << 20
    source = torch.empty(size, dtype=torch.uint8, device=device)
    target = torch.empty_like(source)
    seconds = min(median_seconds(lambda: target.copy_(source), 3, device) for _ in range(2))
    return 2 * size / seconds


def graph_floor(linears: list, rows: int, device: str, dtype: torch.dtype, repeats: int) -> float | None:
    """Seconds of the pass's weight products alone (one product per linear layer on `rows` rows), replayed from
    one CUDA graph: what the pass would cost were nothing else launched. None off CUDA."""
    if not device.startswith("cuda"):
        return None
    inputs = {linear.in_features: torch.zeros(rows, linear.in_features, device=device, dtype=dtype)
              for linear in linears}

    def products():
        for linear in linears:
            torch.nn.functional.linear(inputs[linear.in_features], linear.weight)

    products()  # warm the kernels up outside the capture
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        products()
    return median_seconds(graph.replay, repeats * 4, device)


def tokens_per_round(acceptance: float, drafts: int) -> float:
    """Expected tokens a round of `drafts` draft tokens yields when each is accepted with `acceptance`."""
    if acceptance >= 1.0:
        return drafts + 1.0
    return (1.0 - acceptance ** (drafts + 1)) / (1.0 - acceptance)


def seconds_of(costs: dict, name: str) -> float:
    """A pass's seconds from `pass_costs` (or a plain {name: seconds})."""
    cost = costs[name]
    return cost["seconds"] if isinstance(cost, dict) else cost


def projected_speedup(costs: dict[str, float], acceptance: float, tokens: float) -> tuple[float, int]:
    """(end-to-end speed-up, best draft length 1..8) for a window of `tokens` tokens; a verification of k + 1
    tokens costs the step's plus the measured 9-token extra in proportion."""
    encoder, step = seconds_of(costs, "encoder, one 30-s window"), seconds_of(costs, "main step")
    extra, draft = seconds_of(costs, "verification of 9 tokens") - step, seconds_of(costs, "draft step")
    plain = encoder + tokens * step
    best = (0.0, 0)
    for drafts in range(1, VERIFIED):
        verification = step + extra * drafts / (VERIFIED - 1)
        rounds = tokens / tokens_per_round(acceptance, drafts)
        best = max(best, (plain / (encoder + rounds * (drafts * draft + verification)), drafts))
    return best


def implied_acceptance(costs: dict[str, float], tokens: float, target: float = PAPER_SPEEDUP) -> float | None:
    """The acceptance at which these costs project `target` (None when no acceptance below 1 reaches it)."""
    if projected_speedup(costs, 0.999, tokens)[0] < target:
        return None
    low, high = 0.0, 0.999
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if projected_speedup(costs, middle, tokens)[0] < target else (low, middle)
    return high


def projection(costs: dict[str, float], tokens: float, acceptances) -> list[str]:
    rows = [f"(a {tokens:.0f}-token window, one encoder pass; best fixed draft length)", "",
            "| acceptance per draft token | best draft length | projected speed-up |", "|---|---|---|"]
    for acceptance in acceptances:
        speedup, drafts = projected_speedup(costs, acceptance, tokens)
        rows.append(f"| {acceptance:.2f} | {drafts} | {speedup:.2f}x |")
    implied = implied_acceptance(costs, tokens)
    rows += ["", f"Distil-Whisper's {PAPER_SPEEDUP:g}x needs an acceptance of {implied:.2f} with these costs."
             if implied is not None else f"No acceptance reaches Distil-Whisper's {PAPER_SPEEDUP:g}x with these costs."]
    return rows


def clips_plain_and_speculative(main: str, modes: list[str], assistant: str | None, device: str, compute: str,
                                clips: list[Path], repeats: int) -> tuple[list[str], float]:
    """Each mode on each clip, taking turns clip by clip; (table rows, mean tokens per clip of plain decoding)."""
    systems = {mode: transcriber(main, mode, device=device, compute_type=compute,
                                 assistant_model=assistant if mode in ("assistant", "universal") else None)
               for mode in modes}
    audio = load_clips(clips)
    same = {mode: 0 for mode in modes}
    drafted = {mode: 0 for mode in modes}
    accepted = {mode: 0 for mode in modes}
    plain_tokens = 0
    reference = {}

    def transcribed(whisper, samples):
        result = whisper.transcribe(samples)
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)
        return result

    def progress(mode, index, result, seconds):
        print(f"clip {index + 1}/{len(audio)} {mode}: {seconds:.2f} s", file=sys.stderr, flush=True)

    rounds = interleave({mode: (lambda samples, whisper=whisper: transcribed(whisper, samples))
                         for mode, whisper in systems.items()}, audio, repeats, each=progress)
    for mode in modes:
        for index, result in enumerate(rounds.results[mode]):
            same[mode] += result.tokens == reference.setdefault(index, result.tokens)
            drafted[mode] += result.stats.drafted_tokens
            accepted[mode] += result.stats.accepted_tokens
            if mode == modes[0]:
                plain_tokens += len(result.tokens)
    seconds = {mode: rounds.total(mode, statistics.median) for mode in modes}
    first = modes[0]
    rows = ["| mode | seconds, all clips | speed-up vs " + first + " | acceptance | tokens = " + first + " |",
            "|---|---|---|---|---|"]
    for mode in modes:
        acceptance = f"{accepted[mode] / drafted[mode]:.2f}" if drafted[mode] else "-"
        rows.append(f"| {mode} | {seconds[mode]:.3f} | {seconds[first] / seconds[mode]:.2f}x | {acceptance} | "
                    f"{same[mode]}/{len(clips)} |")
    return rows, plain_tokens / len(clips)


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.gpu")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=("float16", "bfloat16", "float32"), default=None,
                        help="default: float16 on CUDA, float32 on a CPU")
    parser.add_argument("--tiny", action="store_true", help="tiny shapes and tiny.en: a quick check that it runs")
    add_common_flags(parser, main=None, main_help="the real model for the clips (default base; tiny.en with --tiny)",
                     repeats=5, threads=None)
    parser.add_argument("--modes", default="off,prompt-lookup,early-exit",
                        help="modes for the clips, the first is the reference (off)")
    parser.add_argument("--assistant", default=None, help="assistant for modes assistant/universal")
    parser.add_argument("--clips", type=int, default=0, help="first N clips only (default all)")
    parser.add_argument("--acceptance", type=float, action="append", default=[],
                        help="also project at this acceptance (repeatable)")
    parser.add_argument("--tokens", type=float, default=None,
                        help="tokens per window for the projection (default: the clips' mean under plain decoding)")
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: passes, clips")
    parser.add_argument("--smoke", action="store_true",
                        help="instead: every mode, batches, VAD, sampling, fallback, long-form, --compare and the "
                             "server on this device, one line per case (exit 1 when one fails)")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU here (use --device cpu)")
    set_threads(args.threads or None)
    dtype_name = args.dtype or ("float16" if args.device.startswith("cuda") else "float32")
    dtype = getattr(torch, dtype_name)
    shape, main_model = (TINY, args.main or "tiny.en") if args.tiny else (LARGE_V3, args.main or "base")
    if args.smoke:
        return smoke_run(args, main_model if args.main or args.tiny else "base")
    skip = set(filter(None, args.skip.split(",")))
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "CPU"
    print(f"# GPU benchmark on {args.device} ({where}), {dtype_name}, torch {torch.__version__}, "
          f"{passes_label(args.device)}, median of {args.repeats}\n", flush=True)
    tokens = 40.0  # without the clips: about a 10-s utterance
    if "clips" not in skip:
        clips = manifest_clips(Path(args.audio))[: args.clips or None]
        modes = args.modes.split(",")
        rows, tokens = clips_plain_and_speculative(main_model, modes, args.assistant, args.device, dtype_name, clips,
                                                   args.repeats)
        print(f"## {len(clips)} shared clips, {main_model}, {dtype_name}\n\n" + "\n".join(rows) + "\n", flush=True)
    if "passes" not in skip:
        label = "tiny shapes" if args.tiny else "large-v3's dimensions"
        print(f"measuring pass costs at {label} on {args.device} (on a CPU: minutes)", file=sys.stderr, flush=True)
        costs = pass_costs(shape, args.device, dtype, args.repeats)
        rows = ["| pass | ms | aten ops | floor: weights / copy bandwidth, ms | floor: weight products from one "
                "CUDA graph, ms |", "|---|---|---|---|---|"]
        for name, cost in costs.items():
            graph = cost.get("graph")
            rows.append(f"| {name} | {cost['seconds'] * 1e3:.2f} | {cost.get('operations', '-')} | "
                        f"{cost['bandwidth'] * 1e3:.3f} | {'-' if graph is None else f'{graph * 1e3:.3f}'} |")
        ratio = seconds_of(costs, "draft step") / seconds_of(costs, "main step")
        rows.append(f"| draft step / main step | {ratio:.2f} | | | |")
        print(f"## per-pass costs, random weights, {label}, a {ASSISTANT_LAYERS}-layer decoder-only assistant\n\n"
              + "\n".join(rows) + "\n", flush=True)
        acceptances = sorted({*ACCEPTANCES, *args.acceptance})
        tokens = args.tokens or tokens
        print("## projected large-v3 ⟵ distil-large-v3 speed-up\n\n" + "\n".join(projection(costs, tokens, acceptances))
              + "\n", flush=True)
    return 0


def passes_label(device: str) -> str:
    """How the PyTorch path's decoder passes run on `device`: from CUDA graphs (the default on CUDA;
    ASR_SPECDEC_CUDA_GRAPHS=0: eager) or eagerly."""
    from asr_specdec.whisper.runtime.step_graphs import GraphedPasses, choose_passes

    graphed = isinstance(choose_passes(torch.device(device)), GraphedPasses)
    return "decoder passes from CUDA graphs" if graphed else "decoder passes eager"


def smoke_run(args, main_model: str) -> int:
    from .gpu_smoke import smoke

    on_cuda = args.device.startswith("cuda")
    compute_types = [args.dtype] if args.dtype else (["float16", "float32"] if on_cuda else ["float32"])
    print(f"# GPU smoke run on {args.device}, {main_model}, {', '.join(compute_types)}, torch {torch.__version__}, "
          f"{passes_label(args.device)}" + ("" if on_cuda else " (float16: CUDA only)"), flush=True)
    lines = smoke(main_model, args.assistant, args.device, Path(args.audio), compute_types)
    failed = sum("FAILED" in line for line in lines)
    print(f"{len(lines) - failed} of {len(lines)} cases passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
