"""A real 29.8-s file where base, greedy and unconditioned (this project's defaults), writes words nobody said:
goforward.wav and the ES2011a meeting clip with silence around them. The window decoded from the meeting clip's
quiet last second (24.0 s) says " Okay." (one 80-ms word, probability 0.05), and decoded again from 25 s,
" Thank you."; neither is in the transcript of either clip decoded alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from asr_specdec.whisper import load_audio

RATE = 16000


def speech_in_silence(shared_audio: Path) -> np.ndarray:
    def silence(seconds: float) -> np.ndarray:
        return np.zeros(int(seconds * RATE), dtype=np.float32)

    return np.concatenate([silence(3), load_audio(str(shared_audio / "goforward.wav")), silence(14),
                           load_audio(str(shared_audio / "ES2011a.Headset-0-40s-46s.wav")), silence(4)])
