"""A diarized transcription: the audio transcribed with word timestamps (by the caller's function: the decoding
path does not change), its speech taken from those words (speech.py: no VAD model runs), speaker turns found in
that speech (turns.py, or channels.py for stereo with a voice per channel), and the speakers put on its words and
segments (labels.py)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ...core.stats import DecodeStats
from ..io import audio as audio_io
from ..result import TranscriptionResult
from .channels import channel_turns, distinct, stereo_channels
from .labels import all_spoken_by, labelled, without_words
from .options import SpeakerOptions
from .speech import speech_of
from .turns import Turn, find_turns, speaker_label

Transcribe = Callable[[np.ndarray], TranscriptionResult]  # 16-kHz mono samples -> a result with words


class FewerSpeakers(UserWarning):
    """Fewer voices were heard than the number of speakers asked for."""


def diarized(transcribe: Transcribe, audio, sample_rate: float | None, options: SpeakerOptions,
             keep_words: bool) -> TranscriptionResult:
    channels = stereo_channels(audio, sample_rate) if options.channels == "auto" else None
    if channels is not None and distinct(*channels):
        result = _by_channel(transcribe, channels)
    else:
        samples = audio_io.load_audio(audio, sample_rate)
        result = transcribe(samples)
        started = time.perf_counter()
        turns = speaker_turns(samples, result, options)
        heard = len({turn.speaker for turn in turns})
        if options.speakers is not None and heard < options.speakers:
            warnings.warn(f"{options.speakers} speakers asked for, {heard} heard", FewerSpeakers, stacklevel=3)
        result = replace(result, segments=labelled(result.segments, turns), turns=turns,
                         timings=result.timings | {"diarization_seconds": round(time.perf_counter() - started, 4)})
        result.stats.total_seconds += result.timings["diarization_seconds"]
    return result if keep_words else replace(result, segments=without_words(result.segments))


def speaker_turns(samples: np.ndarray, result: TranscriptionResult, options: SpeakerOptions) -> list[Turn]:
    """Who spoke when in `samples`, given their transcription with words: turns in the words' speech."""
    turns = find_turns(samples, speech_of(result.segments, len(samples)), options)
    if not turns and result.segments:  # text but all of it in pauses (or no words): one voice
        turns = [Turn(0.0, round(result.duration, 3), speaker_label(0))]
    return turns


def _by_channel(transcribe: Transcribe, channels: tuple[np.ndarray, np.ndarray]) -> TranscriptionResult:
    """Each channel transcribed on its own and its segments given its speaker, merged in time order."""
    results = [transcribe(channel) for channel in channels]
    segments = sorted((segment for index, result in enumerate(results)
                       for segment in all_spoken_by(result.segments, speaker_label(index))),
                      key=lambda segment: (segment.start, segment.speaker))
    stats = DecodeStats()
    for result in results:
        stats.add(result.stats)
    first = results[0]
    return replace(first, text="".join(segment.text for segment in segments), segments=segments,
                   window_tokens=[tokens for result in results for tokens in result.window_tokens], stats=stats,
                   duration=max(result.duration for result in results), turns=channel_turns(channels, results),
                   timings=first.timings | {"channels": "a speaker per channel"})
