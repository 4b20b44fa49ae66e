"""Stereo whose two channels carry different voices (a call recorded a side each): each channel is one speaker,
as faster-whisper's `decode_audio(split_stereo=True)` users transcribe them. Left is SPEAKER_00, right SPEAKER_01."""

from __future__ import annotations

import os

import numpy as np

from ..io import audio as audio_io
from ..result import TranscriptionResult
from .speech import speech_of
from .turns import Turn, one_voice_turns, speaker_label

# channels this little correlated are two recordings, not one sound in two channels
DISTINCT_CORRELATION = 0.5
QUIET_RMS = 1e-4  # a channel this quiet is empty


def stereo_channels(audio, sample_rate: float | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(left, right) at 16 kHz of a stereo file, bytes or (samples, 2) array; None for mono audio."""
    if isinstance(audio, np.ndarray):
        if audio.ndim != 2 or min(audio.shape) != 2:
            return None
        channels = audio if audio.shape[0] == 2 else audio.T
        left, right = (audio_io.load_audio(np.ascontiguousarray(channel), sample_rate) for channel in channels)
        return left, right
    if isinstance(audio, (str, os.PathLike, bytes, bytearray, memoryview)):
        return audio_io.load_stereo(audio)
    return None


def distinct(left: np.ndarray, right: np.ndarray) -> bool:
    """Both channels have sound, and not the same sound (a mono file read as stereo, a room's two mics)."""
    if min(np.sqrt(np.mean(np.square(left))), np.sqrt(np.mean(np.square(right)))) < QUIET_RMS:
        return False
    return abs(float(np.corrcoef(left, right)[0, 1])) < DISTINCT_CORRELATION


def channel_turns(channels: tuple[np.ndarray, ...], results: list[TranscriptionResult]) -> list[Turn]:
    """Each channel's speech (its transcript's words, speech.py) as its speaker's turns, in time order
    (overlapping where both speak)."""
    turns = [turn for index, (samples, result) in enumerate(zip(channels, results))
             for turn in one_voice_turns(samples, speech_of(result.segments, len(samples)), speaker_label(index))]
    return sorted(turns, key=lambda turn: (turn.start, turn.speaker))
