"""The GPU smoke run (`python -m eval.bench.gpu --smoke`): every path a user takes, on the device given, one line
per case: `ok`, `skipped: why`, or the error. Greedy speculative output must equal plain output in every case.

Cases, at each compute type the device offers (float16 and float32 on CUDA, float32 on a CPU): every mode the
device runs; batches of 1, 2 and 8 rows of uneven lengths; VAD; sampling and temperature fallback (seeded: the
same text twice); long-form with timestamps and word timestamps; the command line's --compare; two concurrent
server requests asking for different modes.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from asr_specdec.core.modes import ASSISTANT_MODES, modes_for

from .harness import timed


class Mismatch(AssertionError):
    pass


def _same(expected, got, what: str) -> None:
    if expected != got:
        raise Mismatch(f"{what} differ from plain: {str(got)[:80]!r} vs {str(expected)[:80]!r}")


def cases(main: str, assistant: str | None, device: str, compute: str, clips: list[np.ndarray],
          long_audio: np.ndarray, clip_path: Path) -> dict[str, Callable[[], str | None]]:
    """Named checks; each returns None (ok) or why it was skipped, and raises on failure."""
    from asr_specdec.whisper import SpeculativeWhisper

    built: dict[str, SpeculativeWhisper] = {}

    def whisper(mode: str, **options) -> SpeculativeWhisper:
        key = f"{mode} {sorted(options.items())}"
        if key not in built:
            built[key] = SpeculativeWhisper(main, mode=mode, device=device, compute_type=compute, language="en",
                                            assistant_model=assistant if mode in ASSISTANT_MODES else None,
                                            **options)
        return built[key]

    speculative = next(mode for mode in ("quantized-self", "early-exit", "prompt-lookup") if mode in
                       modes_for(device))
    plain_tokens = {}

    def plain(index: int) -> list[int]:
        if index not in plain_tokens:
            plain_tokens[index] = whisper("off").transcribe(clips[index]).tokens
        return plain_tokens[index]

    def mode_case(mode):
        def run():
            if mode in ASSISTANT_MODES and assistant is None:
                return "needs --assistant"
            _same(plain(0), whisper(mode).transcribe(clips[0]).tokens, "tokens")
        return run

    def batch_case(size):
        def run():
            rows = [clips[index % len(clips)] for index in range(size)]
            results = whisper(speculative).transcribe_batch(rows, batch_size=size)
            _same([plain(index % len(clips)) for index in range(size)], [result.tokens for result in results],
                  "rows' tokens")
        return run

    def beams():
        for index in range(min(2, len(clips))):
            _same(whisper("off", beam_size=5).transcribe(clips[index]).tokens,
                  whisper(speculative, beam_size=5).transcribe(clips[index]).tokens, "beam-5 tokens")

    def vad():
        _same(whisper("off").transcribe(long_audio, vad_filter=True).text,
              whisper(speculative).transcribe(long_audio, vad_filter=True).text, "texts")

    def sampling():
        texts = [whisper(speculative, do_sample=True, temperature=0.8, seed=3).transcribe(clips[0]).text
                 for _ in range(2)]
        _same(texts[0], texts[1], "seeded samples")

    def fallback():
        # every window retried up the ladder: no average log-probability reaches 0
        options = {"temperature": (0.0, 0.4, 0.8), "logprob_threshold": 0.0, "no_speech_threshold": None}
        first = whisper(speculative, seed=5).transcribe(clips[0], **options)
        _same(first.text, whisper(speculative, seed=5).transcribe(clips[0], **options).text, "seeded retries")
        if all(segment.temperature == 0.0 for segment in first.segments):
            raise Mismatch("no window was retried")

    def long_form():
        expected = whisper("off").transcribe(long_audio, word_timestamps=True)
        got = whisper(speculative).transcribe(long_audio, word_timestamps=True)
        _same([(segment.start, segment.end, segment.text) for segment in expected.segments],
              [(segment.start, segment.end, segment.text) for segment in got.segments], "segments")
        if not any(segment.words for segment in got.segments):
            raise Mismatch("no word timestamps")

    def compare():
        from asr_specdec.cli.transcribe import main as transcribe

        output, errors = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(errors):
            code = transcribe(["--main", main, "--device", device, "--compute-type", compute, "--mode", speculative,
                               "--language", "en", "--compare", "--format", "json", str(clip_path)])
        if code != 0 or "identical output: yes" not in errors.getvalue():
            raise Mismatch(f"exit {code}: {(errors.getvalue() or output.getvalue()).strip()[-160:]}")

    def server():
        two_concurrent_requests(whisper("off"), clip_path, ("off", speculative))

    checks = {f"mode {mode}": mode_case(mode) for mode in modes_for(device)}
    checks.update({f"batch of {size}, uneven lengths": batch_case(size) for size in (1, 2, 8)})
    checks.update({"beam search, 5 beams": beams, "vad": vad, "sampling, seeded": sampling,
                   "temperature fallback, seeded": fallback,
                   "long-form, timestamps and words": long_form, "--compare": compare,
                   "two concurrent server requests, different modes": server})
    return checks


def two_concurrent_requests(transcriber, clip: Path, modes: tuple[str, str]) -> None:
    """Serve `transcriber` on a loopback port; post `clip` twice at once, each asking for one of `modes`: both
    answer 200 with the same text (greedy output does not depend on the mode)."""
    import httpx
    import uvicorn

    from asr_specdec.server import ServerSettings, create_app

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(transcriber, ServerSettings(batch_wait_ms=200.0)),
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        answers: dict[str, httpx.Response] = {}

        def post(mode: str) -> None:
            answers[mode] = httpx.post(f"http://127.0.0.1:{port}/v1/audio/transcriptions", timeout=300,
                                       data={"model": "whisper-1", "mode": mode},
                                       files={"file": (clip.name, clip.read_bytes(), "audio/wav")})

        posts = [threading.Thread(target=post, args=(mode,)) for mode in modes]
        for thread_ in posts:
            thread_.start()
        for thread_ in posts:
            thread_.join()
        for mode, answer in answers.items():
            if answer.status_code != 200:
                raise Mismatch(f"mode {mode}: {answer.status_code} {answer.text[:120]}")
        _same(answers[modes[0]].json()["text"], answers[modes[1]].json()["text"], "answers")
    finally:
        server.should_exit = True
        thread.join(30)


def smoke_case(check: Callable[[], str | None]) -> str:
    """"ok", "skipped: why" or "FAILED: what (where)": a smoke run reports every failure and goes on."""
    try:
        skipped = check()
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        return f"FAILED: {type(error).__name__}: {str(error)[:160]} ({Path(where.filename).name}:{where.lineno})"
    return f"skipped: {skipped}" if skipped else "ok"


def smoke(main: str, assistant: str | None, device: str, audio_folder: Path, compute_types: list[str],
          limit: int = 3, long_seconds: float = 40.0) -> list[str]:
    """One line per case and compute type; a case that fails says how, and the run goes on."""
    from asr_specdec.whisper import load_audio

    from .harness import joined_clips, manifest_clips

    paths = manifest_clips(audio_folder)
    clips = [load_audio(path) for path in paths[:limit]]
    long_audio = joined_clips(audio_folder)[: int(long_seconds * 16000)]  # over 30 s: sequential long-form
    lines = []
    for compute in compute_types:
        for name, check in cases(main, assistant, device, compute, clips, long_audio, paths[0]).items():
            verdict, seconds = timed(smoke_case, check)
            lines.append(f"{compute:8} {name:48} {verdict} ({seconds:.1f} s)")
            print(lines[-1], flush=True)
    return lines
