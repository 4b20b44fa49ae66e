"""Faithfulness benchmark: words written where nobody speaks, words said and lost, repetition loops, for every
path (offline, offline with VAD, long-form, batches, live) and for faster-whisper on the same files.

    python -m eval.bench.faithful [--main base] [--seconds 10] [--clips A.wav,B.wav,...] [--pause 5]
                                  [--quiet-db -30] [--paths offline,vad,longform,batch,server,live]
                                  [--no-faster-whisper] [--threads 2] [--output raw.json]
    python -m eval.bench.faithful --live-check [--runs 5] [--speeds 1,2] [--clock real|simulated]

Non-speech (numpy, `--seconds` each): silence, white, pink and brown noise, a 440 Hz tone, 50 Hz mains hum,
music-like chords, a hard-clipped loud signal and a DC offset; every word written there is invented (reported per
hour of non-speech). Speech: the `--clips` joined with 0.5 s between them, with `--pause` s of silence between
them, with `--pause` s of pink noise between them, and the 0.5-s join `--quiet-db` dB quieter; the reference of a
speech file is the offline transcripts of its clips, each decoded alone; reported: reference words lost
(deleted), words invented (inserted) and the WER. Loops: words in an n-gram said 3 or more times in a row.
Paths: `offline` (transcribe, one file at a time), `vad` (vad_filter=True), `longform` (every non-speech kind
joined into one file), `batch` (transcribe_batch of each set), `server` (POST /v1/audio/transcriptions to the
OpenAI-compatible server in process, one file a request), `live` (a StreamingTranscriber fed 0.5-s chunks at
real-time pace on the simulated clock: the schedule a microphone gives, in the time the decodes take). faster-
whisper (int8, its defaults; and with its VAD) reads the same files.

`--live-check` measures only live against offline: the final committed text of each clip and of the issue's
45-s join (ES2011a first, then six clips) streamed `--runs` times at each of `--speeds` (2: audio arrives twice
as fast, as on a machine at half speed) on the `--clock`, WER against the offline transcript of the same audio.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

from .cli import bench_parser
from .harness import add_common_flags, ct2_checkpoint, faster_whisper, set_threads, timed, transcriber
from .nonspeech import NON_SPEECH, RATE, clips, joined, loop_words, non_speech, spoken_words, word_counts

DEFAULT_CLIPS = "ES2011a.Headset-0-40s-46s.wav,librivox-0870.wav,librivox-0880.wav,goforward.wav"
# the issue's 45-s join: the meeting clip first, then six more
ISSUE_JOIN = ("ES2011a.Headset-0-40s-46s.wav", "libri-1088-134315-0000.wav", "common_voice_en_651325.mp3",
              "librivox-0870.wav", "librivox-0880.wav", "librivox-0890.wav", "librivox-0920.wav")
PATHS = ("offline", "vad", "longform", "batch", "server", "live")
GAP_SECONDS = 0.5
NOISE_DB = -30.0  # pink noise between utterances, RMS in dBFS


def speech_files(named: list[tuple[str, np.ndarray]], pause: float, quiet_db: float) -> dict[str, tuple]:
    """name -> (samples, index of the clips it holds) for the joined speech files."""
    parts = [samples for _, samples in named]
    pink = non_speech("pink noise", pause, seed=1)
    pink *= 10 ** (NOISE_DB / 20) / 0.1
    gap = np.zeros(int(GAP_SECONDS * RATE), dtype=np.float32)
    return {
        "clips joined": joined(parts, gap),
        f"{pause:g} s pauses": joined(parts, np.zeros(int(pause * RATE), dtype=np.float32)),
        f"{pause:g} s of noise between": joined(parts, pink.astype(np.float32)),
        f"quiet ({quiet_db:g} dB)": joined(parts, gap) * np.float32(10 ** (quiet_db / 20)),
    }


def live_text(asr, samples: np.ndarray, speed: float = 1.0, clock: str = "simulated") -> str:
    return live_run(asr, samples, speed, clock)[0]


def live_run(asr, samples: np.ndarray, speed: float = 1.0, clock: str = "simulated") -> tuple[str, list[int]]:
    """The final committed text of a live run, and its schedule (samples received at each update, which
    `replay.play_schedule` replays: the simulated clock adds measured decode times, so runs differ)."""
    from asr_specdec.whisper.live.replay import play, schedule
    from asr_specdec.whisper.live.streaming import StreamingTranscriber

    stream = StreamingTranscriber(asr)
    updates = list(play(stream, samples, chunk_seconds=0.5, speed=speed, clock=clock))
    return updates[-1].update.committed, schedule(updates)


def run_path(path: str, asr, files: dict[str, np.ndarray]) -> dict[str, str]:
    """name -> text of each file through one of our paths (`longform` is handled by the caller)."""
    if path == "offline":
        return {name: asr.transcribe(samples).text for name, samples in files.items()}
    if path == "vad":
        return {name: asr.transcribe(samples, vad_filter=True).text for name, samples in files.items()}
    if path == "batch":
        results = asr.transcribe_batch(list(files.values()), batch_size=8)
        return {name: result.text for name, result in zip(files, results)}
    if path == "live":
        return {name: live_text(asr, samples) for name, samples in files.items()}
    if path == "server":
        return server_texts(asr, files)
    raise ValueError(path)


def server_texts(asr, files: dict[str, np.ndarray]) -> dict[str, str]:
    """name -> text of each file through the OpenAI-compatible server in process (FastAPI's TestClient, no
    socket): the multipart upload (32-bit float WAV, so the samples are the same), the form, the shared
    batcher and the JSON answer, on the same models; one request at a time."""
    import io

    import soundfile
    from fastapi.testclient import TestClient

    from asr_specdec.server import ServerSettings, create_app

    texts = {}
    with TestClient(create_app(asr, ServerSettings())) as client:
        for name, samples in files.items():
            upload = io.BytesIO()
            soundfile.write(upload, samples, RATE, format="WAV", subtype="FLOAT")
            answer = client.post("/v1/audio/transcriptions", data={"model": "whisper-1"},
                                 files={"file": ("audio.wav", upload.getvalue(), "audio/wav")})
            if answer.status_code != 200:
                raise RuntimeError(f"the server answered {answer.status_code} for {name}: {answer.text}")
            texts[name] = answer.json()["text"]
    return texts


def faster_whisper_paths(main: str, threads: int, scratch: Path) -> dict:
    """label -> callable(samples) -> text, for faster-whisper int8 with its defaults (and with its VAD)."""
    if importlib.util.find_spec("faster_whisper") is None:
        return {}
    directory, why = ct2_checkpoint(main, scratch)
    if directory is None:
        print(f"faster-whisper left out: {why}")
        return {}
    model = faster_whisper(directory, "int8", threads)

    def text(samples, **options):
        segments, _ = model.transcribe(samples, language="en", **options)
        return "".join(segment.text for segment in segments).strip()

    return {"faster-whisper int8, defaults": text,
            "faster-whisper int8, vad_filter": lambda samples: text(samples, vad_filter=True)}


def summarize(label: str, seconds: float, texts: dict[str, str], non_speech_files: dict, speech: dict,
              references: dict[str, str]) -> dict:
    """One row: non-speech words (and per hour), loop words, speech reference words, lost, invented, WER."""
    silent = {name: spoken_words(texts[name]) for name in non_speech_files if name in texts}
    silent_seconds = sum(len(non_speech_files[name]) / RATE for name in silent)
    counts = {name: word_counts(references[name], texts[name]) for name in speech if name in texts}
    reference_words = sum(count["reference_words"] for count in counts.values())
    errors = sum(count["lost"] + count["invented"] + count["substituted"] for count in counts.values())
    return {
        "path": label, "seconds": round(seconds, 2),
        "non_speech_seconds": round(silent_seconds, 1), "non_speech_words": sum(silent.values()),
        "non_speech_words_per_hour": round(sum(silent.values()) * 3600 / silent_seconds, 1) if silent_seconds
        else None,
        "loop_words": sum(loop_words(text) for text in texts.values()),
        "speech_reference_words": reference_words,
        "lost": sum(count["lost"] for count in counts.values()),
        "invented": sum(count["invented"] for count in counts.values()),
        "wer": round(errors / reference_words, 4) if reference_words else None,
        "per_file": {name: {"text": texts[name], **({"words": silent[name]} if name in silent else counts[name])}
                     for name in texts},
    }


def row(result: dict) -> str:
    per_hour = result["non_speech_words_per_hour"]
    wer = result["wer"]
    return (f"| {result['path']} | {result['non_speech_seconds']:g} | {result['non_speech_words']} | "
            f"{'-' if per_hour is None else f'{per_hour:g}'} | {result['loop_words']} | "
            f"{result['speech_reference_words']} | {result['lost']} | {result['invented']} | "
            f"{'-' if wer is None else f'{wer:.1%}'} | {result['seconds']:.1f} |")


HEADER = ("| path | non-speech s | words on non-speech | per hour | loop words | speech reference words | lost | "
          "invented | WER | wall s |\n|---|---|---|---|---|---|---|---|---|---|")


def benchmark(args) -> int:
    import tempfile

    kinds = {f"{kind}": non_speech(kind, args.seconds, seed=index) for index, kind in enumerate(NON_SPEECH)}
    named = clips(Path(args.audio), args.clips.split(","))
    speech = speech_files(named, args.pause, args.quiet_db)
    asr = transcriber(args.main)
    asr.transcribe(named[0][1][:5 * RATE])  # warm-up
    clip_text = {name: asr.transcribe(samples).text for name, samples in named}
    reference = " ".join(clip_text[name] for name, _ in named)
    references = {name: reference for name in speech}
    paths = args.paths.split(",")
    print(f"{args.main} (mode {asr.mode}, {asr.compute_type.name}), {args.threads} threads; non-speech "
          f"{len(kinds)} kinds x {args.seconds:g} s; speech from {len(named)} clips "
          f"({sum(len(samples) for _, samples in named) / RATE:.1f} s)\n")
    print(HEADER, flush=True)
    results = []
    def our_path(path):
        if path == "longform":  # all non-speech kinds joined into one long file; the speech files as they are
            together = np.concatenate(list(kinds.values()))
            texts = {"non-speech joined": asr.transcribe(together).text}
            texts |= run_path("offline", asr, {name: samples for name, samples in speech.items()
                                               if len(samples) > asr.pipeline.window_samples})
            return texts, {"non-speech joined": together}
        return run_path(path, asr, kinds | speech), kinds

    for path in paths:
        (texts, files), seconds = timed(our_path, path)
        results.append(summarize(f"ours, {path}", seconds, texts, files, speech, references))
        print(row(results[-1]), flush=True)
    if not args.no_faster_whisper:
        with tempfile.TemporaryDirectory() as scratch:
            for label, text in faster_whisper_paths(args.main, args.threads, Path(scratch)).items():
                texts, seconds = timed(lambda text=text: {name: text(samples)
                                                          for name, samples in (kinds | speech).items()})
                results.append(summarize(label, seconds, texts, kinds, speech, references))
                print(row(results[-1]), flush=True)
    print("\nnon-speech words per kind: " + "; ".join(
        f"{result['path']}: " + ", ".join(f"{name} {info['words']}" for name, info in result["per_file"].items()
                                           if info.get("words"))
        for result in results if result["non_speech_words"]) if any(r["non_speech_words"] for r in results)
        else "\nno path wrote a word on non-speech")
    if args.output:
        Path(args.output).write_text(json.dumps({"clip_texts": clip_text, "results": results}, indent=1))
    return 0


def live_check(args) -> int:
    """Live final text against offline text, on each clip and on the issue's join, runs x speeds."""
    from eval.metrics import word_errors

    folder = Path(args.audio)
    named = clips(folder, args.clips.split(",") if args.clips != DEFAULT_CLIPS else None)
    files = {name: samples for name, samples in named}
    files["issue join (45 s)"] = joined([samples for _, samples in clips(folder, list(ISSUE_JOIN))],
                                        np.zeros(int(GAP_SECONDS * RATE), dtype=np.float32))
    asr = transcriber(args.main)
    offline = {name: asr.transcribe(samples).text for name, samples in files.items()}
    speeds = [float(speed) for speed in args.speeds.split(",")]
    print(f"{args.main} (mode {asr.mode}, {asr.compute_type.name}), {args.threads} threads, {args.clock} clock; "
          f"WER of live final text vs offline, {args.runs} runs\n")
    print("| speed | run | clips: errors / words | clips WER | worst clip | join WER |\n|---|---|---|---|---|---|")
    raw = []
    for speed in speeds:
        for run in range(args.runs):
            runs = {name: live_run(asr, samples, speed, args.clock) for name, samples in files.items()}
            texts = {name: text for name, (text, _) in runs.items()}
            errors = {name: word_errors(offline[name], texts[name]) for name in files}
            clip_names = [name for name in files if name != "issue join (45 s)"]
            clip_errors = sum(errors[name][0] for name in clip_names)
            clip_words = sum(errors[name][1] for name in clip_names)
            worst = max(clip_names, key=lambda name: errors[name][0] / max(errors[name][1], 1))
            join_errors, join_words = errors["issue join (45 s)"]
            print(f"| {speed:g} | {run + 1} | {clip_errors} / {clip_words} | {clip_errors / clip_words:.1%} | "
                  f"{worst} {errors[worst][0]}/{errors[worst][1]} | {join_errors / join_words:.1%} |", flush=True)
            raw.append({"speed": speed, "run": run, "texts": texts, "errors": errors,
                        "schedules": {name: steps for name, (_, steps) in runs.items()}})
    if args.output:
        Path(args.output).write_text(json.dumps({"offline": offline, "runs": raw}, indent=1))
    return 0


def main(argv=None) -> int:
    parser = bench_parser(__doc__, "eval.bench.faithful")
    add_common_flags(parser, repeats=False)
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of each non-speech kind")
    parser.add_argument("--clips", default=DEFAULT_CLIPS, help="comma-separated shared clips the speech files join")
    parser.add_argument("--pause", type=float, default=5.0, help="seconds of silence or noise between utterances")
    parser.add_argument("--quiet-db", type=float, default=-30.0, help="gain of the quiet speech file, dB")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated: {', '.join(PATHS)}")
    parser.add_argument("--no-faster-whisper", action="store_true")
    parser.add_argument("--live-check", action="store_true", help="only live vs offline (see above)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--speeds", default="1,2", help="live: audio speeds (2: a machine at half speed)")
    parser.add_argument("--clock", choices=("real", "simulated"), default="simulated")
    parser.add_argument("--output", help="also write every text and count here (JSON)")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.pause < 0 or args.runs < 1:
        parser.error("--seconds and --runs must be positive, --pause not negative")
    unknown = [path for path in args.paths.split(",") if path not in PATHS]
    if unknown:
        parser.error(f"unknown path {', '.join(unknown)}: choose from {', '.join(PATHS)}")
    set_threads(args.threads)
    return live_check(args) if args.live_check else benchmark(args)


if __name__ == "__main__":
    raise SystemExit(main())
