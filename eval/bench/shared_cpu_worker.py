"""One system of the shared-CPU benchmark, in its own process: loads it, warms it up on the clips, says it is ready
(with the drafting mode ours resolved to), then answers `round` on stdin with the seconds one pass over the clips
took and the CPU seconds the process used meanwhile, all its threads together (a JSON line; `round T`: at T threads
instead), or `clients N` with the seconds N threads at once took to transcribe every clip each, from
the files (as a server's requests are); with `loop` it transcribes the clips until killed (the competitor). Run
as a script with the checkout to measure first on PYTHONPATH, so a baseline checkout can be measured beside this
one (shared_cpu.py --baseline): it imports nothing of eval/.

    python eval/bench/shared_cpu_worker.py SYSTEM THREADS CLIP [CLIP ...]

SYSTEM: ours (the default: `SpeculativeWhisper(MAIN, language="en")`, no mode given), ours-plain (mode off),
fw-int8 (faster-whisper int8 on the base pack converted to CTranslate2 in FW_DIR), fw-int8-2workers (the same
with num_workers=2, for two threads at once).
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def build_ours(system: str, threads: int):
    """(its transcribe function, the drafting mode the transcriber resolved to, a function giving the transcribe
    function at another thread count)."""
    import torch

    from asr_specdec import SpeculativeWhisper

    torch.set_num_threads(threads)
    mode = {"mode": "off"} if system == "ours-plain" else {}
    whisper = SpeculativeWhisper(os.environ.get("MAIN", "base"), language="en", **mode)

    def at_threads(count: int):
        def transcribe(audio):
            torch.set_num_threads(count)  # what `threads=`/`cpu_threads` set: the kernels' budget follows it
            try:
                return whisper.transcribe(audio).text
            finally:
                torch.set_num_threads(threads)
        return transcribe

    return at_threads(threads), getattr(whisper, "mode", None), at_threads


def build_faster_whisper(threads: int, workers: int):
    """A function from 16-kHz samples or a file to text."""
    from faster_whisper import WhisperModel

    model = WhisperModel(os.environ["FW_DIR"], device="cpu", compute_type="int8", cpu_threads=threads,
                         num_workers=workers)

    def transcribe(audio):
        segments, _ = model.transcribe(audio, beam_size=1, language="en", temperature=0, vad_filter=False)
        return "".join(segment.text for segment in segments).strip()

    return transcribe


def build(system: str, threads: int):
    """(a function from 16-kHz samples or a file to text, ours' resolved drafting mode or None, a function giving
    such a function at another thread count)."""
    if system.startswith("ours"):
        return build_ours(system, threads)
    if system in ("fw-int8", "fw-int8-2workers"):
        workers = 2 if system == "fw-int8-2workers" else 1
        models = {threads: build_faster_whisper(threads, workers)}

        def at_threads(count: int):  # faster-whisper fixes cpu_threads when loading: one model per count
            if count not in models:
                models[count] = build_faster_whisper(count, workers)
            return models[count]

        return models[threads], None, at_threads
    raise SystemExit(f"unknown system {system}")


def concurrent_passes(transcribe, clips: list, clients: int) -> tuple[float, list[list[str]]]:
    """(wall seconds until `clients` threads at once have each transcribed every clip, each client's texts in clip
    order). Client i starts at clip i, so concurrent requests carry different audio, as independent users' do."""
    def one_client(first: int) -> list[str]:
        texts = {}
        for step in range(len(clips)):
            index = (first + step) % len(clips)
            texts[index] = transcribe(clips[index])
        return [texts[index] for index in range(len(clips))]

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        texts = list(pool.map(one_client, range(clients)))
    return time.perf_counter() - started, texts


def answer(**fields) -> None:
    print(json.dumps(fields), flush=True)


def main() -> int:
    system, threads, clips = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    from faster_whisper import decode_audio

    audios = [decode_audio(clip, sampling_rate=16000) for clip in clips]
    transcribe, mode, at_threads = build(system, threads)
    warm = {threads}
    answer(ready=True, texts=[transcribe(audio) for audio in audios], mode=mode)  # after a warm-up pass
    for command in sys.stdin:
        name, *values = command.split() or [""]
        if name == "loop":
            while True:
                for audio in audios:
                    transcribe(audio)
        elif name == "round":
            count = int(values[0]) if values else threads
            passing = at_threads(count)
            if count not in warm:  # a first pass at a new count warms it up (faster-whisper: a model loaded)
                [passing(audio) for audio in audios]
                warm.add(count)
            started, used = time.perf_counter(), time.process_time()
            texts = [passing(audio) for audio in audios]
            answer(seconds=time.perf_counter() - started, cpu_seconds=time.process_time() - used, texts=texts)
        elif name == "clients":
            seconds, texts = concurrent_passes(transcribe, clips, int(values[0]))
            answer(seconds=seconds, texts=texts)
        else:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
