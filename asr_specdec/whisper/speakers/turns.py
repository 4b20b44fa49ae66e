"""Speaker turns of mono audio: the speech regions (the transcript's words, speech.py) joined are cut into 1.6-s
windows every `step_seconds`; each window's d-vector (encoder.py) is clustered into voices (clustering.py); every
10-ms frame takes the voice its covering windows are most similar to, each window weighing most at its centre;
runs shorter than `min_turn_seconds` join a neighbour; a change of voice moves to the quietest frame near it
(speakers change in pauses); the pauses inside the speech (speech.py) and the silence between regions are in no turn."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.audio import SAMPLE_RATE
from .clustering import centres, cluster, in_order
from .encoder import FRAME_STEP, WINDOW_FRAMES, SpeakerEncoder, encoder_precision, mel_frames, shared_encoder
from .options import SpeakerOptions
from .speech import pauses

NO_VOICE = -1  # a frame in a pause
LOUDNESS_DBFS = -30.0  # speech is raised to this level before embedding (Resemblyzer's preprocessing)
SNAP_SECONDS = 0.3  # a change of voice moves to the quietest frame within this distance


@dataclass(frozen=True)
class Turn:
    start: float
    end: float
    speaker: str


def speaker_label(voice: int) -> str:
    return f"SPEAKER_{voice:02d}"


def find_turns(samples: np.ndarray, regions: list[tuple[int, int]], options: SpeakerOptions,
               encoder: SpeakerEncoder | None = None) -> list[Turn]:
    """Turns in time order on the file's timeline; none without speech. `regions`: (start, end) samples of the
    speech, in order (speech.speech_of: the transcript's words)."""
    if not regions:
        return []
    mel = mel_frames(_louder(np.concatenate([samples[start:end] for start, end in regions])))
    starts = window_starts(len(mel), max(1, round(options.step_seconds * SAMPLE_RATE / FRAME_STEP)))
    windows = np.stack([_padded(mel[start:start + WINDOW_FRAMES]) for start in starts])
    embeddings = (encoder or shared_encoder()).embed(windows, precision=encoder_precision(options.encoder_precision))
    voices = cluster(embeddings, options.speakers, options.same_speaker_distance, options.max_speakers,
                     options.distinct_voice_distance, options.fewest_voice_windows)
    frame_voices = _frame_voices(embeddings @ centres(embeddings, voices).T, starts, len(mel))
    frame_voices = _smoothed(frame_voices, round(options.min_turn_seconds * SAMPLE_RATE / FRAME_STEP))
    power = mel.sum(axis=1)
    frame_voices = _snapped(frame_voices, power, round(SNAP_SECONDS * SAMPLE_RATE / FRAME_STEP))
    return _on_timeline(_voiced(frame_voices, pauses(power)), regions)


def one_voice_turns(samples: np.ndarray, regions: list[tuple[int, int]], speaker: str) -> list[Turn]:
    """The speech of a recording with one voice (a stereo channel) as its turns: the regions less their pauses."""
    if not regions:
        return []
    power = mel_frames(np.concatenate([samples[start:end] for start, end in regions])).sum(axis=1)
    turns = _on_timeline(np.where(pauses(power), NO_VOICE, 0), regions)
    return [Turn(turn.start, turn.end, speaker) for turn in turns]


def _voiced(frame_voices: np.ndarray, paused: np.ndarray) -> np.ndarray:
    """Frames in pauses NO_VOICE; the voices left numbered in order of first appearance."""
    labels = np.full(len(frame_voices), NO_VOICE, dtype=np.int64)
    labels[~paused] = in_order(frame_voices[~paused])
    return labels


def window_starts(frames: int, step: int) -> list[int]:
    """First frame of each window: every `step` frames, the last one ending at the last frame."""
    if frames <= WINDOW_FRAMES:
        return [0]
    starts = list(range(0, frames - WINDOW_FRAMES + 1, step))
    if starts[-1] != frames - WINDOW_FRAMES:
        starts.append(frames - WINDOW_FRAMES)
    return starts


def _padded(mel: np.ndarray) -> np.ndarray:
    """Speech shorter than one window is zero-padded to it, as Resemblyzer does."""
    return np.pad(mel, ((0, WINDOW_FRAMES - len(mel)), (0, 0))) if len(mel) < WINDOW_FRAMES else mel


def _louder(speech: np.ndarray) -> np.ndarray:
    rms = float(np.sqrt(np.mean(np.square(speech, dtype=np.float64))))
    target = 10 ** (LOUDNESS_DBFS / 20)
    return (speech * (target / rms)).astype(np.float32) if 0 < rms < target else speech


def _frame_voices(scores: np.ndarray, starts: list[int], frames: int) -> np.ndarray:
    """Per frame, the voice with the highest similarity over the windows covering it, each window weighing its
    frames by a triangle peaking at its centre: a window's embedding speaks most for its middle, and near a change
    of voice a plain mean leans towards whichever voice dominates mixed windows (0.96 s early on the float32
    encoder's test conversation, 0.23 s at most weighted)."""
    weights = 1 - np.abs(np.arange(WINDOW_FRAMES) - (WINDOW_FRAMES - 1) / 2) / (WINDOW_FRAMES / 2)
    totals = np.zeros((frames, scores.shape[1]))  # a frame's weighted sum: its mean's argmax, without dividing
    for start, row in zip(starts, scores):
        end = min(start + WINDOW_FRAMES, frames)
        totals[start:end] += weights[:end - start, None] * row
    return totals.argmax(axis=1)


def _runs(labels: np.ndarray) -> list[tuple[int, int, int]]:
    """(start, end, label) of each run of equal labels."""
    changes = np.flatnonzero(np.diff(labels)) + 1
    bounds = [0, *changes.tolist(), len(labels)]
    return [(begin, end, int(labels[begin])) for begin, end in zip(bounds, bounds[1:])]


def _smoothed(labels: np.ndarray, shortest: int) -> np.ndarray:
    """The shortest run under `shortest` frames joins its longer neighbour, until none is left."""
    labels = labels.copy()
    while True:
        runs = _runs(labels)
        if len(runs) < 2:
            return labels
        index = min(range(len(runs)), key=lambda number: runs[number][1] - runs[number][0])
        begin, end, _ = runs[index]
        if end - begin >= shortest:
            return labels
        neighbours = [runs[number] for number in (index - 1, index + 1) if 0 <= number < len(runs)]
        labels[begin:end] = max(neighbours, key=lambda run: run[1] - run[0])[2]


def _snapped(labels: np.ndarray, energy: np.ndarray, reach: int) -> np.ndarray:
    """Each change of voice moved to the quietest frame within `reach` frames of it."""
    labels = labels.copy()
    for begin, _, label in _runs(labels)[1:]:
        low, high = max(1, begin - reach), min(len(labels) - 1, begin + reach)
        quietest = low + int(np.argmin(energy[low:high + 1]))
        previous = labels[begin - 1]
        if quietest < begin:
            labels[quietest:begin] = label
        else:
            labels[begin:quietest] = previous
    return labels


def _on_timeline(labels: np.ndarray, regions: list[tuple[int, int]]) -> list[Turn]:
    """Runs of each speech region as turns at the region's place in the file (pauses, NO_VOICE, left out)."""
    turns, local = [], 0
    for start, end in regions:
        first, last = local // FRAME_STEP, min(len(labels), -(-(local + end - start) // FRAME_STEP))
        for begin, finish, voice in _runs(labels[first:last]) if last > first else []:
            if voice == NO_VOICE:
                continue
            turn_start = start + max(0, (first + begin) * FRAME_STEP - local)
            turn_end = start + min(end - start, (first + finish) * FRAME_STEP - local)
            if turn_end > turn_start:
                turns.append(Turn(round(turn_start / SAMPLE_RATE, 3), round(turn_end / SAMPLE_RATE, 3),
                                  speaker_label(voice)))
        local += end - start
    return _joined(turns)


def _joined(turns: list[Turn]) -> list[Turn]:
    """Touching turns of one speaker (a region boundary inside one voice's speech) made one."""
    joined: list[Turn] = []
    for turn in turns:
        if joined and joined[-1].speaker == turn.speaker and turn.start - joined[-1].end < 1e-6:
            joined[-1] = Turn(joined[-1].start, turn.end, turn.speaker)
        else:
            joined.append(turn)
    return joined
