"""The diarized call's speech comes from the transcript's words: no VAD model runs, the turns lie where the words
are (not where the transcription heard nothing), and the pauses the words run over are in no turn."""

from __future__ import annotations

import numpy as np
import pytest

from asr_specdec.core.stats import DecodeStats
from asr_specdec.whisper.io.formats import Segment
from asr_specdec.whisper.longform import vad
from asr_specdec.whisper.recipe.words import Word
from asr_specdec.whisper.result import TranscriptionResult
from asr_specdec.whisper.speakers import transcript
from asr_specdec.whisper.speakers.options import SpeakerOptions
from eval.bench.conversations import conversation

from ...threads import one_thread  # noqa: F401 (an autouse fixture)

WORD_SECONDS = 0.4


@pytest.fixture(scope="module")
def talk(shared_audio):
    return conversation(shared_audio, ("librispeech-1088", "librivox-reader"), 0.5, turns=4)


def stand_in(until: float):
    """A transcription whose words run back to back, as Whisper's do (a turn's last word reaching over the pause
    to the next turn), from the first speech to `until` seconds; nothing after."""
    def transcribe(samples):
        start = 0.1
        words = []
        while start + WORD_SECONDS <= until:
            words.append(Word(" w", round(start, 2), round(start + WORD_SECONDS, 2), 0.9))
            start += WORD_SECONDS
        segment = Segment(words[0].start, words[-1].end, "".join(word.word for word in words), words=tuple(words))
        return TranscriptionResult(text=segment.text, segments=[segment], window_tokens=[], stats=DecodeStats(),
                                   language="en", duration=len(samples) / 16000, mode="plain", main_model="stand-in")
    return transcribe


@pytest.fixture
def no_vad(monkeypatch):
    def refuse(*_):
        raise AssertionError("a VAD model ran")

    monkeypatch.setattr(vad, "_silero", refuse)
    monkeypatch.setattr(vad, "new_silero_model", refuse)


def test_turns_follow_the_words_and_no_vad_model_runs(talk, no_vad):
    until = talk.changes[2] - 0.5  # the words stop inside the third turn: the fourth is not in the transcript
    result = transcript.diarized(stand_in(until), talk.samples, None, SpeakerOptions(speakers=2), keep_words=True)
    assert {turn.speaker for turn in result.turns} == {"SPEAKER_00", "SPEAKER_01"}
    assert result.turns[0].start >= 0.1 - 0.2 - 1e-6 and result.turns[-1].end <= until + 0.2 + 1e-6
    found = [(before.end + after.start) / 2 for before, after in zip(result.turns, result.turns[1:])
             if before.speaker != after.speaker]
    assert len(found) == 2 and all(abs(mine - true) <= 0.5 for mine, true in zip(found, talk.changes))
    assert all(word.speaker for segment in result.segments for word in segment.words)
    assert result.timings["diarization_seconds"] >= 0
    assert np.isclose(result.duration, len(talk.samples) / 16000)


def test_the_pauses_the_words_run_over_are_in_no_turn(talk, no_vad):
    result = transcript.diarized(stand_in(len(talk.samples) / 16000), talk.samples, None, SpeakerOptions(speakers=2),
                                 keep_words=False)
    for middle in talk.changes:  # mid-pause: 0.5 s of silence between the voices, covered by a word
        assert not any(turn.start <= middle <= turn.end for turn in result.turns), (middle, result.turns)
    assert result.segments[0].words == ()
