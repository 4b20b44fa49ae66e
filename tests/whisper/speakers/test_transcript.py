"""The diarized call's order of work: the speech is found (once) while the audio is transcribed, and the turns are
found from those regions, not from a second VAD pass."""

from __future__ import annotations

import threading

import numpy as np

from asr_specdec.core.stats import DecodeStats
from asr_specdec.whisper.io.formats import Segment
from asr_specdec.whisper.recipe.words import Word
from asr_specdec.whisper.result import TranscriptionResult
from asr_specdec.whisper.speakers import transcript, turns
from asr_specdec.whisper.speakers.options import SpeakerOptions
from eval.bench.conversations import conversation

from ...threads import one_thread  # noqa: F401 (an autouse fixture)


def test_speech_is_found_once_while_the_audio_is_transcribed(shared_audio, monkeypatch):
    talk = conversation(shared_audio, ("librispeech-1088", "librivox-reader"), 0.5, turns=4)
    finding = threading.Event()
    calls = []
    real_vad = turns.speech_regions

    def vad(samples, options):
        calls.append(threading.current_thread().name)
        finding.set()
        return real_vad(samples, options)

    def transcribe(samples):
        # the VAD has started before the transcription ends: they overlap
        assert finding.wait(timeout=30)
        seconds = len(samples) / 16000
        word = Word(" hello", 0.5, 1.0, 0.9)
        return TranscriptionResult(text=" hello", segments=[Segment(0.5, 1.0, " hello", words=(word,))],
                                   window_tokens=[], stats=DecodeStats(), language="en", duration=seconds,
                                   mode="plain", main_model="stand-in")

    monkeypatch.setattr(turns, "speech_regions", vad)
    result = transcript.diarized(transcribe, talk.samples, None, SpeakerOptions(speakers=2), keep_words=False)
    assert len(calls) == 1 and calls[0] != threading.current_thread().name
    assert {turn.speaker for turn in result.turns} == {"SPEAKER_00", "SPEAKER_01"}
    assert result.segments[0].speaker == "SPEAKER_00" and result.segments[0].words == ()
    assert result.timings["diarization_seconds"] >= 0
    assert np.isclose(result.duration, len(talk.samples) / 16000)
