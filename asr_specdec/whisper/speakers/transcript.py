"""A diarized transcription: the audio transcribed with word timestamps (by the caller's function: the decoding
path does not change) while its speech is found (VAD, in a thread of its own), speaker turns found (turns.py, or
channels.py for stereo with a voice per channel), and the speakers put on its words and segments (labels.py)."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from ...core.stats import DecodeStats
from ..io import audio as audio_io
from ..result import TranscriptionResult
from .channels import channel_turns, distinct, stereo_channels
from .labels import all_spoken_by, labelled, without_words
from .options import SpeakerOptions
from .turns import Turn, find_turns, speaker_label, speech_in

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
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="diarization-vad") as pool:
            # the speech is found while the audio is transcribed: Silero VAD runs in onnxruntime, one thread (its
            # session's setting), releasing the GIL, so it needs no torch thread setting; the speaker encoder, a
            # torch LSTM, runs after the transcription on the caller's thread with the process's torch threads
            # (torch.set_num_threads is process-wide: a one-thread LSTM beside the decoding would need it)
            speech = pool.submit(speech_in, samples)
            result = transcribe(samples)
            started = time.perf_counter()
            regions = speech.result()
        turns = find_turns(samples, options, regions=regions)
        if not turns and result.segments:  # words where VAD heard no speech: one voice
            turns = [Turn(0.0, round(result.duration, 3), speaker_label(0))]
        heard = len({turn.speaker for turn in turns})
        if options.speakers is not None and heard < options.speakers:
            warnings.warn(f"{options.speakers} speakers asked for, {heard} heard", FewerSpeakers, stacklevel=3)
        result = replace(result, segments=labelled(result.segments, turns), turns=turns,
                         timings=result.timings | {"diarization_seconds": round(time.perf_counter() - started, 4)})
        result.stats.total_seconds += result.timings["diarization_seconds"]
    return result if keep_words else replace(result, segments=without_words(result.segments))


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
                   duration=max(result.duration for result in results), turns=channel_turns(channels),
                   timings=first.timings | {"channels": "a speaker per channel"})
