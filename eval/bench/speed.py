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

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..paths import SHARED_AUDIO
from .cli import bench_parser
from .drafters import manifest_clips
from .longform import joined_clips

LANGUAGE = "en"
DEFAULT_COMPUTE_TYPES = "float32,int8:float32,bfloat16:float32,bfloat16,int8"
CAPS = {"avx2": {"CT2_FORCE_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                 "DNNL_MAX_CPU_ISA": "AVX2", "ASR_SPECDEC_ISA": "avx2"},
        # an AVX-VNNI CPU (Alder Lake and later): AVX2 with vpdpbusd on 256-bit registers (in its EVEX form where
        # this CPU has AVX512-VNNI but not AVX-VNNI: native/backend.py, EVEX_VNNI)
        "avxvnni": {"CT2_FORCE_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2_VNNI",
                    "DNNL_MAX_CPU_ISA": "AVX2_VNNI", "ASR_SPECDEC_ISA": "avx2", "ASR_SPECDEC_EVEX_VNNI": "1"}}
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "message.wav"


@dataclass
class Tally:
    seconds: list = field(default_factory=list)  # per clip: the minimum over repeats
    texts: list = field(default_factory=list)
    tokens: list = field(default_factory=list)
    drafted: int = 0
    accepted: int = 0
    error: str = ""


def best_of(function, repeats: int):
    """(minimum seconds, result of the last call) of `function()` over `repeats` calls."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


# ---------------------------------------------------------------------------------------------------- systems

def our_systems(main: str, compute_types: list[str], beam_size: int | None = None) -> dict:
    from asr_specdec.weights.whisper_models import resolve_model_dir
    from asr_specdec.whisper import SpeculativeWhisper
    from asr_specdec.whisper.runtime.lean_model import load_lean_whisper
    from asr_specdec.whisper.runtime.lean_processor import load_lean_processor

    location = resolve_model_dir(main)
    loaded = (load_lean_whisper(location), load_lean_processor(location))
    systems = {}
    for compute in compute_types:
        for mode in ("off", "quantized-self"):
            whisper = SpeculativeWhisper(loaded, mode=mode, language=LANGUAGE, compute_type=compute,
                                         beam_size=beam_size)
            beams = f", beam {beam_size}" if beam_size else ""
            systems[f"ours {compute}, {'plain' if mode == 'off' else mode}{beams}"] = whisper
        if beam_size:
            systems[f"ours {compute}, quantized-self, greedy"] = SpeculativeWhisper(
                loaded, mode="quantized-self", language=LANGUAGE, compute_type=compute)
    return systems


def faster_whisper_systems(main: str, threads: int, scratch: Path) -> tuple[dict, str]:
    from asr_specdec.weights.packs import assemble_pack

    try:
        from faster_whisper import WhisperModel
    except ImportError:
        return {}, "faster-whisper is not installed (pip install 'asr-specdec[bench]')"
    ct2_dir = scratch / "ct2"
    ct2_dir.mkdir()
    assemble_pack(main, ct2_dir)
    return {f"faster-whisper {kind}": WhisperModel(str(ct2_dir), device="cpu", compute_type=kind,
                                                   cpu_threads=threads, num_workers=1)
            for kind in ("float32", "int8")}, str(ct2_dir)


def faster_whisper_text(model, samples: np.ndarray, timestamps: bool, beam_size: int = 1) -> tuple[str, list[int]]:
    # beam 1 (or --beam-size), temperature 0 only, no VAD, no previous-text prompt, nothing dropped as silence
    segments, _ = model.transcribe(samples, beam_size=beam_size, temperature=0, vad_filter=False, language=LANGUAGE,
                                   condition_on_previous_text=False, without_timestamps=not timestamps,
                                   no_speech_threshold=None)
    segments = list(segments)
    return "".join(segment.text for segment in segments).strip(), [t for s in segments for t in s.tokens]


def transformers_system(main: str):
    from asr_specdec.weights.whisper_models import load_whisper

    return load_whisper(main)


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
    from asr_specdec.weights.whisper_models import resolve_model_dir
    from asr_specdec.whisper import SpeculativeWhisper
    from asr_specdec.whisper.io.audio import load_audio
    from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner
    from asr_specdec.whisper.runtime.encoder import EncoderRunner
    from asr_specdec.whisper.runtime.lean_model import load_lean_whisper
    from asr_specdec.whisper.runtime.lean_processor import load_lean_processor

    directory = resolve_model_dir(main)
    model, processor = load_lean_whisper(directory), load_lean_processor(directory)
    samples = load_audio(clip)
    features = processor(samples, sampling_rate=16000, return_tensors="pt").input_features
    plain = SpeculativeWhisper((model, processor), mode="off", language="en", compute_type="float32")
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
    for _ in range(10 * repeats):
        began = time.perf_counter()
        main.greedy_choices(main.feed_rows(main_cache, [following[:9]], [start])[0], None)
        verified = time.perf_counter()
        for index in range(8):
            drafter.greedy_choices(drafter.feed_rows(draft_cache, [following[index:index + 1]], [start + index])[0],
                                   None)
        drafted = time.perf_counter()
        main.greedy_choices(main.feed_rows(main_cache, [following[:1]], [start])[0], None)
        times["verification over 9 tokens"].append(verified - began)
        times["draft step"].append((drafted - verified) / 8)
        times["one main step"].append(time.perf_counter() - drafted)
    median = {name: float(np.median(values)) for name, values in times.items()}
    return [f"| in a round (median): {name} | {seconds * 1e3:.2f} |" for name, seconds in median.items()] + [
        f"| in a round: a draft step / a main step | {median['draft step'] / median['one main step']:.2f} |"]


def short_clips(systems: dict, fw: dict, hf, clips: list[Path], repeats: int,
                beam_size: int = 1) -> tuple[list[str], dict]:
    from asr_specdec.whisper.io.audio import load_audio

    audio = [load_audio(clip) for clip in clips]
    tallies = {name: Tally() for name in [*systems, *fw, *(["transformers generate()"] if hf else [])]}
    runs = {name: (lambda samples, whisper=whisper: _ours(whisper, samples)) for name, whisper in systems.items()}
    runs.update({name: (lambda samples, model=model: (*faster_whisper_text(model, samples, False, beam_size), 0, 0))
                 for name, model in fw.items()})
    if hf:
        runs["transformers generate()"] = lambda samples: (*transformers_text(hf, samples, False), 0, 0)
    for run in runs.values():  # warm-up
        run(audio[0])
    for samples in audio:
        for name, run in runs.items():
            seconds, (text, tokens, drafted, accepted, *_) = best_of(lambda run=run, samples=samples: run(samples),
                                                                 repeats)
            tally = tallies[name]
            tally.seconds.append(seconds)
            tally.texts.append(text)
            tally.tokens.append(tokens)
            tally.drafted += drafted
            tally.accepted += accepted
    return table(tallies, clips), tallies


def _ours(whisper, samples):
    result = whisper.transcribe(samples)
    return (result.text, result.tokens, result.stats.drafted_tokens, result.stats.accepted_tokens,
            result.stats.beam_steps_per_main_pass)


def table(tallies: dict, clips: list[Path]) -> list[str]:
    import json

    from ..metrics import wer

    manifest = {json.loads(line)["audio"]: json.loads(line)["reference"]
                for line in (clips[0].parent / "manifest.jsonl").read_text().splitlines() if line.strip()}
    scored = [index for index, clip in enumerate(clips) if manifest.get(clip.name)]
    references = [manifest[clips[index].name] for index in scored]
    reference_name = next((name for name in tallies if name.startswith("ours float32, plain")), None)
    fw_int8, fw_fp32 = tallies.get("faster-whisper int8"), tallies.get("faster-whisper float32")
    lines = ["| system | total s | per clip ms (median) | vs faster-whisper int8 | vs faster-whisper float32 | "
             "WER | text = float32 | acceptance |", "|---|---|---|---|---|---|---|---|"]
    for name, tally in tallies.items():
        total = sum(tally.seconds)
        ratio_int8 = f"{sum(fw_int8.seconds) / total:.2f}x" if fw_int8 else ""
        ratio_fp32 = f"{sum(fw_fp32.seconds) / total:.2f}x" if fw_fp32 else ""
        error_rate = wer(references, [tally.texts[index] for index in scored]) if scored else 0.0
        same = ""
        if reference_name:
            reference = tallies[reference_name].texts
            same = f"{sum(a == b for a, b in zip(tally.texts, reference))}/{len(reference)}"
        acceptance = f"{tally.accepted / tally.drafted:.0%}" if tally.drafted else ""
        lines.append(f"| {name} | {total:.2f} | {np.median(tally.seconds) * 1e3:.0f} | {ratio_int8} | {ratio_fp32} | "
                     f"{error_rate:.2%} | {same} | {acceptance} |")
    return lines


def long_file(systems: dict, fw: dict, hf, audio: np.ndarray, repeats: int, beam_size: int = 1) -> list[str]:
    runs = {name: (lambda whisper=whisper: _ours(whisper, audio)) for name, whisper in systems.items()}
    runs.update({name: (lambda model=model: (*faster_whisper_text(model, audio, True, beam_size), 0, 0))
                 for name, model in fw.items()})
    if hf:
        runs["transformers generate(return_timestamps=True)"] = lambda: (*transformers_text(hf, audio, True), 0, 0)
    seconds = {name: float("inf") for name in runs}
    results = {}
    for _ in range(repeats):
        for name, run in runs.items():
            taken, results[name] = best_of(run, 1)
            seconds[name] = min(seconds[name], taken)
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
    from asr_specdec.whisper import SpeculativeWhisper
    from asr_specdec.whisper.io.audio import load_audio

    audio = [load_audio(clip) for clip in clips]
    systems = {mode: SpeculativeWhisper(main, mode=mode, language=LANGUAGE, compute_type=compute)
               for mode in ("off", "quantized-self")}
    for whisper in systems.values():
        whisper.transcribe_batch(audio[:2], batch_size=2)
    seconds, tokens = {name: float("inf") for name in systems}, {}
    for _ in range(repeats):
        for name, whisper in systems.items():
            taken, results = best_of(lambda whisper=whisper: whisper.transcribe_batch(audio, batch_size=batch_size), 1)
            seconds[name] = min(seconds[name], taken)
            tokens[name] = [result.tokens for result in results]
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
            started = time.perf_counter()
            process = subprocess.run([sys.executable, "-c", PEAK_RSS_LAUNCHER, *command], capture_output=True,
                                     text=True, cwd=here, env=environment, timeout=600)
            best = min(best, time.perf_counter() - started)
            errors = process.stderr.strip().splitlines()
            peak = max(peak, int(errors.pop()) if errors and errors[-1].isdigit() else 0)
            output = process.stdout.strip().splitlines()[-1] if process.returncode == 0 and process.stdout.strip() \
                else f"failed: {errors[-1:]}"
        lines.append(f"| {name} | {best:.2f} | {peak / 1024:.0f} | {output} |")
    return lines


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.speed")
    parser.add_argument("--main", default="base")
    parser.add_argument("--audio", default=str(SHARED_AUDIO), help="folder with manifest.jsonl")
    parser.add_argument("--limit", type=int, default=0, help="first N clips only")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compute-types", default=DEFAULT_COMPUTE_TYPES)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: steps, short, long, batch, cold")
    parser.add_argument("--isa", choices=tuple(CAPS), help="ours on this kernel build, the others capped to it")
    parser.add_argument("--beam-size", type=int, default=None,
                        help="every system decodes with this many beams (faster-whisper too); default: greedy")
    args = parser.parse_args(argv)
    if args.isa and any(os.environ.get(name) != value for name, value in CAPS[args.isa].items()):
        environment = {**os.environ, **CAPS[args.isa]}  # the caps must be set before torch loads
        arguments = sys.argv[1:] if argv is None else list(argv)
        return subprocess.run([sys.executable, "-m", "eval.bench.speed", *arguments], env=environment).returncode
    torch.set_num_threads(args.threads)
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
