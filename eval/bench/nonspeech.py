"""The faithfulness benchmark's inputs and measures: non-speech signals made with numpy, speech files joined from
the shared clips (with long pauses or noise between utterances, or very quiet), and the counts it reports (words
written, reference words lost or invented, words in repeated n-gram loops)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .harness import manifest_entries

RATE = 16000
# every kind of non-speech the benchmark plays (each `seconds` long, reproducible from `seed`)
NON_SPEECH = ("silence", "white noise", "pink noise", "brown noise", "440 Hz tone", "50 Hz hum", "chords",
              "clipping", "DC offset")
LOOP_REPEATS = 3  # an n-gram said this many times in a row (or more) is a loop


def non_speech(kind: str, seconds: float, seed: int = 0) -> np.ndarray:
    """One non-speech signal, float32 in [-1, 1], 16 kHz."""
    count = int(seconds * RATE)
    random = np.random.default_rng(seed)
    time = np.arange(count) / RATE
    if kind == "silence":
        signal = np.zeros(count)
    elif kind == "white noise":
        signal = 0.1 * random.standard_normal(count)
    elif kind == "pink noise":
        signal = _coloured(random, count, 0.5)
    elif kind == "brown noise":
        signal = _coloured(random, count, 1.0)
    elif kind == "440 Hz tone":
        signal = 0.3 * np.sin(2 * np.pi * 440 * time)
    elif kind == "50 Hz hum":  # mains hum: 50 Hz and its odd harmonics, a little noise
        signal = sum(0.2 / k * np.sin(2 * np.pi * 50 * k * time) for k in (1, 3, 5, 7))
        signal = signal + 0.003 * random.standard_normal(count)
    elif kind == "chords":
        signal = _chords(time)
    elif kind == "clipping":  # a loud tone and noise driven far past full scale, hard-clipped
        signal = np.clip(4 * np.sin(2 * np.pi * 220 * time) + 2 * random.standard_normal(count), -1, 1)
    elif kind == "DC offset":  # a constant offset on faint noise
        signal = 0.4 + 0.002 * random.standard_normal(count)
    else:
        raise ValueError(f"unknown non-speech kind '{kind}': choose from {', '.join(NON_SPEECH)}")
    return np.asarray(signal, dtype=np.float32)


def _coloured(random, count: int, exponent: float) -> np.ndarray:
    """Noise whose power falls as 1/f**(2*exponent) (0.5: pink, 1: brown), scaled to an RMS of 0.1."""
    spectrum = np.fft.rfft(random.standard_normal(count))
    frequencies = np.fft.rfftfreq(count, 1 / RATE)
    spectrum[1:] /= frequencies[1:] ** exponent
    spectrum[0] = 0
    signal = np.fft.irfft(spectrum, count)
    return 0.1 * signal / (np.sqrt(np.mean(signal ** 2)) or 1.0)


def _chords(time: np.ndarray) -> np.ndarray:
    """Music-like: major and minor triads with harmonics, one per half second, each struck and decaying."""
    roots = (220.0, 246.9, 261.6, 196.0, 174.6, 220.0, 164.8, 196.0)
    signal = np.zeros_like(time)
    for index, start in enumerate(np.arange(0, time[-1] if len(time) else 0, 0.5)):
        root = roots[index % len(roots)]
        third = 2 ** ((3 if index % 2 else 4) / 12)
        inside = (time >= start) & (time < start + 0.5)
        local = time[inside] - start
        envelope = np.exp(-4 * local)
        for ratio in (1.0, third, 2 ** (7 / 12)):
            for harmonic, weight in ((1, 1.0), (2, 0.4), (3, 0.2)):
                signal[inside] += 0.05 * weight * envelope * np.sin(2 * np.pi * root * ratio * harmonic * local)
    return signal


def clips(folder: Path, names: list[str] | None = None) -> list[tuple[str, np.ndarray]]:
    """The shared clips (name, 16-kHz samples) in the manifest's order, or those named, in that order."""
    from asr_specdec.whisper.io.audio import load_audio

    entries = [entry["audio"] for entry in manifest_entries(folder)]
    chosen = names if names is not None else entries
    missing = [name for name in chosen if name not in entries]
    if missing:
        raise ValueError(f"not in {folder / 'manifest.jsonl'}: {', '.join(missing)}")
    return [(name, load_audio(folder / name)) for name in chosen]


def joined(parts: list[np.ndarray], gap: np.ndarray) -> np.ndarray:
    """The parts one after another with `gap` after each."""
    return np.concatenate([piece for part in parts for piece in (part, gap)]).astype(np.float32)


def loop_words(text: str) -> int:
    """Words in repeated n-gram loops: for each run of one n-gram (n = 1..8) said LOOP_REPEATS or more times in
    a row, the words of every repeat after the first (the longest loop at each place counts once)."""
    words = text.lower().split()
    looped, index = 0, 0
    while index < len(words):
        best = 0
        for size in range(1, 9):
            gram, repeats = words[index:index + size], 1
            if len(gram) < size:
                break
            while words[index + repeats * size:index + (repeats + 1) * size] == gram:
                repeats += 1
            if repeats >= LOOP_REPEATS:
                best = max(best, (repeats - 1) * size)
        if best:
            looped += best
            index += best
        else:
            index += 1
    return looped


def word_counts(reference: str, hypothesis: str) -> dict:
    """Normalised word counts of a hypothesis against its reference: reference words, words lost (deleted),
    invented (inserted), substituted, and the WER."""
    import jiwer

    from eval.metrics import normalize

    reference, hypothesis = normalize(reference), normalize(hypothesis)
    words = len(reference.split())
    if not words:
        return {"reference_words": 0, "lost": 0, "invented": len(hypothesis.split()), "substituted": 0,
                "wer": None}
    output = jiwer.process_words(reference, hypothesis if hypothesis.strip() else "")
    return {"reference_words": words, "lost": output.deletions, "invented": output.insertions,
            "substituted": output.substitutions,
            "wer": (output.deletions + output.insertions + output.substitutions) / words}


def spoken_words(text: str) -> int:
    """Words in a text as the WER counts them (normalised)."""
    from eval.metrics import normalize

    return len(normalize(text).split())
