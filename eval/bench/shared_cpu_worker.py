"""One system of the shared-CPU benchmark, in its own process: loads it, warms it up on the clips, then answers
`round` on stdin with the seconds one pass over the clips took (a JSON line), or with `loop` transcribes the clips
until killed (the competitor). Run as a script with the checkout to measure first on PYTHONPATH, so a baseline
checkout can be measured beside this one (shared_cpu.py --baseline).

    python eval/bench/shared_cpu_worker.py SYSTEM THREADS CLIP [CLIP ...]

SYSTEM: ours (the default: quantized-self, default compute type), ours-plain, fw-int8 (faster-whisper int8 on
the base pack converted to CTranslate2 in FW_DIR).
"""

from __future__ import annotations

import json
import os
import sys
import time


def build(system: str, threads: int):
    """A function from 16-kHz samples to text."""
    if system.startswith("ours"):
        import torch

        from asr_specdec import SpeculativeWhisper

        torch.set_num_threads(threads)
        mode = "off" if system == "ours-plain" else "quantized-self"
        whisper = SpeculativeWhisper(os.environ.get("MAIN", "base"), language="en", mode=mode)
        return lambda samples: whisper.transcribe(samples).text
    if system == "fw-int8":
        from faster_whisper import WhisperModel

        model = WhisperModel(os.environ["FW_DIR"], device="cpu", compute_type="int8", cpu_threads=threads)

        def transcribe(samples):
            segments, _ = model.transcribe(samples, beam_size=1, language="en", temperature=0, vad_filter=False)
            return "".join(segment.text for segment in segments).strip()

        return transcribe
    raise SystemExit(f"unknown system {system}")


def main() -> int:
    system, threads, clips = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    from faster_whisper import decode_audio

    audios = [decode_audio(clip, sampling_rate=16000) for clip in clips]
    transcribe = build(system, threads)
    texts = [transcribe(audio) for audio in audios]  # warm-up
    print(json.dumps({"ready": True, "texts": texts}), flush=True)
    for command in sys.stdin:
        command = command.strip()
        if command == "loop":
            while True:
                for audio in audios:
                    transcribe(audio)
        if command != "round":
            break
        started = time.perf_counter()
        texts = [transcribe(audio) for audio in audios]
        print(json.dumps({"seconds": time.perf_counter() - started, "texts": texts}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
