"""Speed on the same weights: ours at each compute type, plain and speculative, against faster-whisper (float32
and int8) and transformers' generate(), interleaved in one run on the shared clips and on the 64-s long file;
batches of 8; the decoder's per-pass costs; and the cold-start wall time of each command line.

    python -m eval.bench.speed [--main base] [--threads 2] [--repeats 3] [--compute-types ...] [--skip cold,long]
                               [--isa avx2|avxvnni] [--beam-size 5]

`--isa avx2` runs ours on the AVX2 kernel build and caps faster-whisper (CTranslate2), torch and oneDNN at AVX2,
as on a CPU without AVX-512 (the process restarts itself with those settings before anything loads). `--isa
avxvnni` is an AVX-VNNI CPU (Alder Lake and later): our AVX2 build with vpdpbusd on 256-bit registers, oneDNN at
AVX2_VNNI, CTranslate2 at AVX2 (it has no AVX-VNNI level); it needs a CPU with AVX-VNNI or AVX512-VNNI.
`--beam-size N`: every system decodes with N beams (faster-whisper too).

Every system gets the same 16-kHz samples in memory and is timed from samples to tokens (features included),
after a warm-up; each clip's time is the minimum over the repeats, the systems taking turns clip by clip.
faster-whisper runs the same CTranslate2 weights (the offline pack), beam 1, no VAD, the same threads. Ratios
compare times from this one run. With `--beam-size N` every system decodes with N beams instead (faster-whisper
with beam_size=N, ours plain and speculative), and ours greedy speculative stays in for the WER comparison.
"text = float32" counts clips whose text equals our float32 plain text.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from .cli import bench_parser
from .harness import (
    LANGUAGE,
    ClipTally,
    add_common_flags,
    best_of,
    clip_table,
    ct2_checkpoint,
    faster_whisper,
    interleave,
    joined_clips,
    load_clips,
    load_lean_main,
    load_main,
    manifest_clips,
    set_threads,
    timed,
    transcriber,
)

DEFAULT_COMPUTE_TYPES = "float32,int8:float32,bfloat16:float32,bfloat16,int8"
CAPS = {"avx2": {"CT2_FORCE_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                 "DNNL_MAX_CPU_ISA": "AVX2", "ASR_SPECDEC_ISA": "avx2"},
        # an AVX-VNNI CPU (Alder Lake and later): AVX2 with vpdpbusd on 256-bit registers (in its EVEX form where
        # this CPU has AVX512-VNNI but not AVX-VNNI: native/backend.py, EVEX_VNNI)
        "avxvnni": {"CT2_FORCE_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2_VNNI",
                    "DNNL_MAX_CPU_ISA": "AVX2_VNNI", "ASR_SPECDEC_ISA": "avx2", "ASR_SPECDEC_EVEX_VNNI": "1"}}
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "message.wav"


# ---------------------------------------------------------------------------------------------------- systems

def our_systems(main: str, compute_types: list[str], beam_size: int | None = None) -> dict:
    loaded = load_lean_main(main)
    systems = {}
    for compute in compute_types:
        for mode in ("off", "quantized-self"):
            whisper = transcriber(loaded, mode, compute_type=compute, beam_size=beam_size)
            beams = f", beam {beam_size}" if beam_size else ""
            systems[f"ours {compute}, {'plain' if mode == 'off' else mode}{beams}"] = whisper
        if beam_size:
            greedy = transcriber(loaded, "quantized-self", compute_type=compute)
            systems[f"ours {compute}, quantized-self, greedy"] = greedy
    return systems


def faster_whisper_systems(main: str, threads: int, scratch: Path) -> tuple[dict, str]:
    if importlib.util.find_spec("faster_whisper") is None:
        return {}, "faster-whisper is not installed (pip install 'asr-specdec[bench]')"
    ct2_dir, missing = ct2_checkpoint(main, scratch)
    if ct2_dir is None:
        return {}, missing
    return {f"faster-whisper {kind}": faster_whisper(ct2_dir, kind, threads) for kind in ("float32", "int8")}, \
        str(ct2_dir)


def faster_whisper_text(model, samples: np.ndarray, timestamps: bool, beam_size: int = 1) -> tuple[str, list[int]]:
    # beam 1 (or --beam-size), temperature 0 only, no VAD, no previous-text prompt, nothing dropped as silence
    segments, _ = model.transcribe(samples, beam_size=beam_size, temperature=0, vad_filter=False, language=LANGUAGE,
                                   condition_on_previous_text=False, without_timestamps=not timestamps,
                                   no_speech_threshold=None)
    segments = list(segments)
    return "".join(segment.text for segment in segments).strip(), [t for s in segments for t in s.tokens]


def transformers_system(main: str):
    return load_main(main)


def transformers_text(loaded, samples: np.ndarray, long: bool) -> tuple[str, list[int]]:
    options = {"language": LANGUAGE, "task": "transcribe"}
    if long:
        inputs = loaded.processor(samples, sampling_rate=16000, return_tensors="pt", truncation=False,
                                  padding="longest", return_attention_mask=True)
        options.update(attention_mask=inputs.attention_mask, return_timestamps=True)
    else:
        inputs = loaded.processor(samples, sampling_rate=16000, return_tensors="pt")
    with torch.inference_mode():
        ids = loaded.model.generate(inputs.input_features, **options)[0].tolist()
    return loaded.processor.tokenizer.decode(ids, skip_special_tokens=True).strip(), ids


# ---------------------------------------------------------------------------------------------------- sections

def step_costs(main: str, repeats: int, clip: Path) -> list[str]:
    """Per-pass costs of the encoder and decoder on a real clip (random features give flat vocabulary scores, which
    no speech gives and which make the certified greedy choice rescore far more candidates): the clip's first 30
    greedy tokens, then one more token, or the next 9 at once."""
    from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner
    from asr_specdec.whisper.runtime.encoder import EncoderRunner

    model, processor = load_lean_main(main)
    samples = load_clips([clip])[0]
    features = processor(samples, sampling_rate=16000, return_tensors="pt").input_features
    plain = transcriber((model, processor), "off", compute_type="float32")
    sequence = plain.tokens.prompt(plain.tokens.language_ids["<|en|>"], "transcribe", False) + plain.transcribe(
        samples).tokens
    if len(sequence) < 40:
        raise SystemExit(f"{clip.name}: {len(sequence)} tokens, too few for 30 + 10")
    rows = [f"({clip.name}, tokens 30-39 of its transcript)", "", "| pass | ms |", "|---|---|"]
    with torch.inference_mode():
        for precision in ("float32", "bfloat16", "int8"):
            encoder = EncoderRunner(model.model.encoder, precision)
            encoder(features)
            seconds, encoded = best_of(lambda encoder=encoder: encoder(features), max(2, repeats))
            rows.append(f"| encoder, one 30-s window, {precision} | {seconds * 1e3:.0f} |")
        encoded = EncoderRunner(model.model.encoder, "float32")(features)
        prefix, following = sequence[:30], sequence[30:40]
        for weights, cross in (("float32", None), ("float32", torch.bfloat16), ("bfloat16", None), ("int8", None),
                               ("int8-vnni", torch.int8)):
            runner = WhisperDecoderRunner(model, weights=weights, cross_dtype=cross,
                                          kv_dtype=torch.bfloat16 if cross == torch.int8 else None)
            if runner.native is None:
                rows.append(f"| decoder {weights}: native kernels unavailable | |")
                break
            cache = runner.new_cache(encoded)
            runner.feed_rows(cache, [prefix], [0])
            label = f"{weights} weights, {runner.cross_dtype} cross keys/values".replace("torch.", "")

            def one(runner=runner, cache=cache):
                hidden = runner.feed_rows(cache, [following[:1]], [30])[0]
                return runner.greedy_choices(hidden, None)

            def nine(runner=runner, cache=cache):
                hidden = runner.feed_rows(cache, [following[:9]], [30])[0]
                return runner.greedy_choices(hidden, None)

            one_token = best_of(one, 20 * repeats)[0]
            nine_tokens = best_of(nine, 10 * repeats)[0]
            rows.append(f"| decoder token + greedy choice, {label} | {one_token * 1e3:.2f} |")
            rows.append(f"| verification over 9 tokens, {label} | {nine_tokens * 1e3:.2f} "
                        f"({nine_tokens / one_token:.2f}x one token) |")
        rows += speculative_round(model, encoded, prefix, following, repeats)
        rows += beam_passes(model, encoded, prefix, following, repeats)
    return rows


def beam_passes(model, encoded, prefix: list[int], following: list[int], repeats: int, beams: int = 5) -> list[str]:
    """A decoder pass of `beams` beams of one audio (float32 decoder, bfloat16 cross-attention states, as `auto`),
    one token each and three each (a verification), with the audio's cross states shared by its beams (the native
    cache's `cross_rows`) and with a copy per beam row."""
    from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner

    runner = WhisperDecoderRunner(model, weights="float32", cross_dtype=torch.bfloat16)
    if runner.native is None:
        return []
    shared = runner.new_cache(encoded)
    shared.keep(torch.zeros(beams, dtype=torch.long), {})
    caches = {"one copy shared": shared, "a copy per beam": runner.new_cache(encoded.expand(beams, -1, -1))}
    rows = []
    for count in (1, 3):
        for label, cache in caches.items():
            runner.feed_rows(cache, [prefix] * beams, [0] * beams)
            feeds = [following[:count]] * beams
            seconds = best_of(lambda cache=cache, feeds=feeds: runner.feed_rows(cache, feeds, [len(prefix)] * beams),
                              10 * repeats)[0]
            rows.append(f"| decoder pass, {beams} beams x {count} token{'s' if count > 1 else ''}, cross states "
                        f"{label} | {seconds * 1e3:.2f} |")
    return rows


def speculative_round(model, encoded, prefix: list[int], following: list[int], repeats: int) -> list[str]:
    """A round as `auto` decoding runs it: the main model (float32 decoder, bfloat16 cross-attention states)
    verifies 9 tokens, then the int8 self-drafter (int8 weights and cross states) steps 8 times, then one plain
    main step: each pass costs more here than alone, since each evicts the others' weights from the cache."""
    from asr_specdec.native import capabilities
    from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner

    native = capabilities()
    main = WhisperDecoderRunner(model, weights="float32", cross_dtype=torch.bfloat16)
    drafter = WhisperDecoderRunner(model, weights=native.fastest_int8, kv_dtype=torch.bfloat16,
                                   cross_dtype=torch.int8 if native.int8_products else None)
    if main.native is None or drafter.native is None:
        return []
    states = main.cross_attention_states(encoded)
    main_cache, draft_cache = main.new_cache(encoded, cross_states=states), drafter.new_cache(encoded, states)
    start = len(prefix)
    main.feed_rows(main_cache, [prefix], [0])
    drafter.feed_rows(draft_cache, [prefix], [0])
    times = {"verification over 9 tokens": [], "draft step": [], "one main step": []}
    def verify():
        main.greedy_choices(main.feed_rows(main_cache, [following[:9]], [start])[0], None)

    def draft():
        for index in range(8):
            drafter.greedy_choices(drafter.feed_rows(draft_cache, [following[index:index + 1]], [start + index])[0],
                                   None)

    def step():
        main.greedy_choices(main.feed_rows(main_cache, [following[:1]], [start])[0], None)

    for _ in range(10 * repeats):
        times["verification over 9 tokens"].append(timed(verify)[1])
        times["draft step"].append(timed(draft)[1] / 8)
        times["one main step"].append(timed(step)[1])
    median = {name: float(np.median(values)) for name, values in times.items()}
    return [f"| in a round (median): {name} | {seconds * 1e3:.2f} |" for name, seconds in median.items()] + [
        f"| in a round: a draft step / a main step | {median['draft step'] / median['one main step']:.2f} |"]


def short_clips(systems: dict, fw: dict, hf, clips: list[Path], repeats: int,
                beam_size: int = 1) -> tuple[list[str], dict]:
    audio = load_clips(clips)
    runs = {name: (lambda samples, whisper=whisper: _ours(whisper, samples)) for name, whisper in systems.items()}
    runs.update({name: (lambda samples, model=model: (*faster_whisper_text(model, samples, False, beam_size), 0, 0))
                 for name, model in fw.items()})
    if hf:
        runs["transformers generate()"] = lambda samples: (*transformers_text(hf, samples, False), 0, 0)
    rounds = interleave(runs, audio, repeats)
    tallies = {name: ClipTally(seconds=rounds.per_item(name)) for name in runs}
    for name, tally in tallies.items():
        for text, tokens, drafted, accepted, *_ in rounds.results[name]:
            tally.texts.append(text)
            tally.tokens.append(tokens)
            tally.drafted += drafted
            tally.accepted += accepted
    return clip_table(tallies, clips), tallies


def _ours(whisper, samples):
    whisper.forget_encoding()  # a repeat of the same clip must run its encoder, as faster-whisper's does
    result = whisper.transcribe(samples)
    return (result.text, result.tokens, result.stats.drafted_tokens, result.stats.accepted_tokens,
            result.stats.beam_steps_per_main_pass)


def long_file(systems: dict, fw: dict, hf, audio: np.ndarray, repeats: int, beam_size: int = 1) -> list[str]:
    runs = {name: (lambda samples, whisper=whisper: _ours(whisper, samples)) for name, whisper in systems.items()}
    runs.update({name: (lambda samples, model=model: (*faster_whisper_text(model, samples, True, beam_size), 0, 0))
                 for name, model in fw.items()})
    if hf:
        runs["transformers generate(return_timestamps=True)"] = lambda samples: (
            *transformers_text(hf, samples, True), 0, 0)
    rounds = interleave(runs, [audio], repeats, warm_up=False)
    seconds = {name: rounds.total(name) for name in runs}
    results = {name: rounds.results[name][0] for name in runs}
    lines = [f"{len(audio) / 16000:.1f} s of audio, sequential 30-s windows with timestamps",
             "| system | seconds | vs our plain at its compute type | vs faster-whisper int8 | text = our plain |",
             "|---|---|---|---|---|"]
    for name, taken in seconds.items():
        plain_name = name.replace("quantized-self", "plain")
        ours = plain_name in seconds and name.startswith("ours")
        versus_plain = f"{seconds[plain_name] / taken:.2f}x" if ours else ""
        versus_fw = f"{seconds['faster-whisper int8'] / taken:.2f}x" if "faster-whisper int8" in seconds else ""
        same = ("yes" if results[plain_name][0] == results[name][0] else "NO") if ours else ""
        passes = results[name][4] if len(results[name]) > 4 else ""
        name = f"{name} ({passes:.2f} beam steps per pass)" if passes else name
        lines.append(f"| {name} | {taken:.2f} | {versus_plain} | {versus_fw} | {same} |")
    return lines


def batches(main: str, compute: str, clips: list[Path], repeats: int, batch_size: int = 8) -> list[str]:
    audio = load_clips(clips)
    systems = {mode: transcriber(main, mode, compute_type=compute) for mode in ("off", "quantized-self")}
    for whisper in systems.values():
        whisper.transcribe_batch(audio[:2], batch_size=2)
    runs = {name: (lambda workload, whisper=whisper: whisper.transcribe_batch(workload, batch_size=batch_size))
            for name, whisper in systems.items()}
    rounds = interleave(runs, [audio], repeats, warm_up=False)
    seconds = {name: rounds.total(name) for name in runs}
    tokens = {name: [result.tokens for result in rounds.results[name][0]] for name in runs}
    return [f"batches of {batch_size}, {len(audio)} clips, compute type {systems['off'].compute_type}: "
            f"plain {seconds['off']:.2f} s, speculative {seconds['quantized-self']:.2f} s, "
            f"speedup {seconds['off'] / seconds['quantized-self']:.2f}x, identical: "
            f"{'yes' if tokens['off'] == tokens['quantized-self'] else 'NO'}"]


# runs a command and reports its peak resident set size (KiB) on stderr's last line: started from this small
# process, the command does not inherit the bench's own high-water mark (see memory.py)
PEAK_RSS_LAUNCHER = ("import resource, subprocess, sys\n"
                     "code = subprocess.run(sys.argv[1:]).returncode\n"
                     "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
                     "sys.exit(code)")


def cold_starts(ct2_dir: str | None, threads: int, repeats: int) -> list[str]:
    """Wall time and peak resident memory of a fresh process transcribing samples/message.wav, each command run
    `repeats` times (the best time, the largest peak)."""
    here = Path(__file__).resolve().parents[2]
    ours = [sys.executable, "-m", "asr_specdec.transcribe", str(SAMPLE)]
    commands = {
        "python -m asr_specdec.transcribe samples/message.wav": ours,
        "python -m asr_specdec.transcribe samples/message.wav --mode off": [*ours, "--mode", "off"],
        **{f"python -m asr_specdec.transcribe samples/message.wav --compute-type {compute}":
           [*ours, "--compute-type", compute] for compute in ("float32", "int8:float32", "int8")},
    }
    if ct2_dir:
        for kind in ("float32", "int8"):
            commands[f"faster-whisper {kind} (python -c: load, transcribe)"] = [sys.executable, "-c", (
                "from faster_whisper import WhisperModel\n"
                f"model = WhisperModel({ct2_dir!r}, device='cpu', compute_type={kind!r}, cpu_threads={threads})\n"
                f"segments, _ = model.transcribe({str(SAMPLE)!r}, beam_size=1, vad_filter=False, language='en')\n"
                "print(''.join(segment.text for segment in segments).strip())")]
    commands["transformers (python -c: load, generate)"] = [sys.executable, "-c", (
        "import torch\n"
        f"torch.set_num_threads({threads})\n"
        "from transformers import WhisperForConditionalGeneration, WhisperProcessor\n"
        "from asr_specdec.weights.whisper_models import resolve_model_dir\n"
        "from asr_specdec.whisper.io.audio import load_audio\n"
        "location = resolve_model_dir('base')\n"
        "model = WhisperForConditionalGeneration.from_pretrained(location).eval()\n"
        "processor = WhisperProcessor.from_pretrained(location)\n"
        f"features = processor(load_audio({str(SAMPLE)!r}), sampling_rate=16000, return_tensors='pt').input_features\n"
        "ids = model.generate(features, language='en', task='transcribe')\n"
        "print(processor.batch_decode(ids, skip_special_tokens=True)[0].strip())")]
    lines = ["| command | wall s (best) | peak RSS MiB | output |", "|---|---|---|---|"]
    environment = {**__import__("os").environ, "OMP_NUM_THREADS": str(threads)}
    for name, command in commands.items():
        best, peak, output = float("inf"), 0, ""
        for _ in range(repeats):
            process, seconds = timed(subprocess.run, [sys.executable, "-c", PEAK_RSS_LAUNCHER, *command],
                                     capture_output=True, text=True, cwd=here, env=environment, timeout=600)
            best = min(best, seconds)
            errors = process.stderr.strip().splitlines()
            peak = max(peak, int(errors.pop()) if errors and errors[-1].isdigit() else 0)
            output = process.stdout.strip().splitlines()[-1] if process.returncode == 0 and process.stdout.strip() \
                else f"failed: {errors[-1:]}"
        lines.append(f"| {name} | {best:.2f} | {peak / 1024:.0f} | {output} |")
    return lines


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.speed")
    add_common_flags(parser, repeats=3)
    parser.add_argument("--limit", type=int, default=0, help="first N clips only")
    parser.add_argument("--compute-types", default=DEFAULT_COMPUTE_TYPES)
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: steps, short, long, batch, cold")
    parser.add_argument("--isa", choices=tuple(CAPS), help="ours on this kernel build, the others capped to it")
    parser.add_argument("--beam-size", type=int, default=None,
                        help="every system decodes with this many beams (faster-whisper too); default: greedy")
    args = parser.parse_args(argv)
    if args.isa and any(os.environ.get(name) != value for name, value in CAPS[args.isa].items()):
        environment = {**os.environ, **CAPS[args.isa]}  # the caps must be set before torch loads
        arguments = sys.argv[1:] if argv is None else list(argv)
        return subprocess.run([sys.executable, "-m", "eval.bench.speed", *arguments], env=environment).returncode
    set_threads(args.threads)
    skip = set(filter(None, args.skip.split(",")))
    compute_types = args.compute_types.split(",")
    clips = manifest_clips(Path(args.audio))[: args.limit or None]
    from asr_specdec.native import capabilities
    from asr_specdec.whisper.runtime.compute import auto_compute_type

    beams = f", beam size {args.beam_size}" if args.beam_size else ""
    print(f"# speed, {args.main}, {args.threads} threads, torch {torch.__version__}, best of {args.repeats}{beams}; "
          f"kernels: {capabilities().description}, auto = {auto_compute_type('cpu')}\n")
    if "steps" not in skip:
        longest = max(manifest_clips(Path(args.audio)), key=lambda clip: clip.stat().st_size)
        print("## decoder and encoder passes\n\n" + "\n".join(step_costs(args.main, args.repeats, longest)) + "\n",
              flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        ours = our_systems(args.main, compute_types, args.beam_size)
        fw, ct2_dir = faster_whisper_systems(args.main, args.threads, Path(scratch))
        if not fw:
            print(f"(faster-whisper skipped: {ct2_dir})")
            ct2_dir = None
        hf = transformers_system(args.main) if not args.beam_size else None  # its beams are another algorithm
        if "short" not in skip:
            lines, _ = short_clips(ours, fw, hf, clips, args.repeats, args.beam_size or 1)
            print(f"## {len(clips)} shared clips, one at a time\n\n" + "\n".join(lines) + "\n", flush=True)
        if "long" not in skip:
            audio = joined_clips(Path(args.audio))
            lines = long_file(ours, fw, hf, audio, args.repeats, args.beam_size or 1)
            print("## the long file\n\n" + "\n".join(lines) + "\n", flush=True)
        if "batch" not in skip:
            print("## batches\n\n" + "\n".join(batches(args.main, "auto", clips, args.repeats)) + "\n", flush=True)
        if "cold" not in skip:
            print("## cold start (fresh process, warm disk cache)\n\n"
                  + "\n".join(cold_starts(ct2_dir, args.threads, args.repeats)) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
