"""Conversations made from the shared clips, with who spoke when: each speaker's clips (one voice per group below)
cut into turns of a few seconds at quiet points, the speakers taking turns with a pause, none, or a short
overlap between turns. The reference speech of a turn is where Silero VAD hears speech in that piece alone
(`REFERENCE_VAD`); diarization itself takes its speech from the transcript's words (speakers/speech.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

RATE = 16000
# the shared clips grouped by voice (pocketsphinx's two clips are left out: nothing says who recorded them)
VOICES = {
    "ljspeech": ("LJ002-0020.wav", "LJ002-0035.wav"),
    "librispeech-1088": ("libri-1088-134315-0000.wav",),
    "ami-es2011a": ("ES2011a.Headset-0-40s-46s.wav",),
    "librivox-reader": ("librivox-0870.wav", "librivox-0880.wav", "librivox-0890.wav", "librivox-0920.wav",
                        "librivox-0930.wav"),
    "common-voice": ("common_voice_en_651325.mp3",),
}
# the reference speech: pauses of 0.3 s split it, 0.1 s of padding (the settings diarization's own VAD had before
# its speech came from the transcript)
REFERENCE_VAD = {"min_silence_duration_ms": 300, "speech_pad_ms": 100}
TURN_SECONDS = 4.0  # long clips are cut near every this many seconds, at the quietest 20 ms


@dataclass(frozen=True)
class Conversation:
    name: str
    samples: np.ndarray
    turns: list[tuple[float, float, str]]  # reference speech: (start, end, voice), overlapping where voices do
    changes: list[float]  # seconds where one voice's turn ends and the next one's begins (the mid-gap)


def pieces(folder: Path, voice: str) -> list[np.ndarray]:
    """A voice's clips cut into turns of about TURN_SECONDS."""
    from asr_specdec.whisper.io.audio import load_audio

    cut = []
    for name in VOICES[voice]:
        samples = load_audio(folder / name)
        while len(samples) > 1.5 * TURN_SECONDS * RATE:
            point = _quietest(samples, int(TURN_SECONDS * RATE))
            cut.append(samples[:point])
            samples = samples[point:]
        cut.append(samples)
    return cut


def _quietest(samples: np.ndarray, near: int) -> int:
    frame = RATE // 50
    low, high = near - RATE, near + RATE
    energies = [float(np.sum(np.square(samples[at:at + frame]))) for at in range(low, high, frame)]
    return low + frame * int(np.argmin(energies)) + frame // 2


def conversation(folder: Path, voices: tuple[str, ...], gap: float, turns: int, name: str = "") -> Conversation:
    """`turns` turns, the voices in rotation, each next piece of that voice (wrapping round); `gap` seconds of
    silence between turns, negative for an overlap."""
    from asr_specdec.whisper.longform.vad import VadOptions, speech_regions

    available = {voice: pieces(folder, voice) for voice in voices}
    placed, cursor = [], 0
    for number in range(turns):
        voice = voices[number % len(voices)]
        piece = available[voice][(number // len(voices)) % len(available[voice])]
        start = max(0, cursor + (int(gap * RATE) if number else 0))
        placed.append((start, piece, voice))
        cursor = start + len(piece)
    samples = np.zeros(max(start + len(piece) for start, piece, _ in placed), dtype=np.float32)
    reference, changes = [], []
    for index, (start, piece, voice) in enumerate(placed):
        samples[start:start + len(piece)] += piece
        reference += [((start + begin) / RATE, (start + end) / RATE, voice)
                      for begin, end in speech_regions(piece, VadOptions(**REFERENCE_VAD))]
        if index:
            previous_end = placed[index - 1][0] + len(placed[index - 1][1])
            changes.append((start + previous_end) / 2 / RATE)
    return Conversation(name or f"{len(voices)} voices, gap {gap:+g} s", np.clip(samples, -1, 1), reference,
                        changes)


def conversations(folder: Path) -> list[Conversation]:
    """The benchmark's set: 2, 3 and 4 voices; with pauses, back to back, and with short overlaps."""
    plans = [(("librispeech-1088", "librivox-reader"), 0.5, 8),
             (("ami-es2011a", "librivox-reader"), 0.0, 6),
             (("librispeech-1088", "ljspeech"), -0.3, 6),
             (("librispeech-1088", "ami-es2011a", "librivox-reader"), 0.5, 9),
             (("librivox-reader", "common-voice", "librispeech-1088"), -0.3, 9),
             (("librispeech-1088", "ami-es2011a", "librivox-reader", "ljspeech"), 0.3, 12),
             (("librivox-reader", "librispeech-1088", "common-voice", "ami-es2011a"), 0.0, 12)]
    return [conversation(folder, voices, gap, turns) for voices, gap, turns in plans]
