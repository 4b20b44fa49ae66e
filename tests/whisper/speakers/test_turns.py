"""Speaker turns of real speech: a constructed two-speaker conversation's changes found within half a second (its
speech from a real transcription's words, tiny.en), and the awkward inputs (one speaker, silence, speech shorter
than one embedding window, more speakers asked for than speak) answered sensibly."""

from __future__ import annotations

import numpy as np
import pytest

from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.io.audio import load_audio
from asr_specdec.whisper.speakers.options import SpeakerOptions, speaker_options
from asr_specdec.whisper.speakers.transcript import speaker_turns
from asr_specdec.whisper.speakers.turns import WINDOW_FRAMES, find_turns, window_starts
from eval.bench.conversations import conversation

from ...threads import one_thread  # noqa: F401 (an autouse fixture)

TOLERANCE = 0.5  # seconds


@pytest.fixture(scope="module")
def transcribed(shared_audio, tiny_en_dir):
    """The two-speaker conversations (0.5-s pauses, back to back) and their transcriptions with words."""
    whisper = SpeculativeWhisper(str(tiny_en_dir), mode="off")
    talks = {gap: conversation(shared_audio, ("librispeech-1088", "librivox-reader"), gap, turns=6)
             for gap in (0.5, 0.0)}
    return {gap: (talk, whisper.transcribe(talk.samples, word_timestamps=True)) for gap, talk in talks.items()}


def whole(samples: np.ndarray) -> list[tuple[int, int]]:
    return [(0, len(samples))]


def changes(turns) -> list[float]:
    """Where the speaker changes: midway between one speaker's turn and the next speaker's."""
    return [(before.end + after.start) / 2 for before, after in zip(turns, turns[1:])
            if before.speaker != after.speaker]


@pytest.mark.parametrize("gap", [0.5, 0.0])
@pytest.mark.parametrize("known", [True, False])
def test_turns_of_two_speakers_change_within_half_a_second_of_the_truth(transcribed, gap, known):
    talk, result = transcribed[gap]
    turns = speaker_turns(talk.samples, result, SpeakerOptions(speakers=2 if known else None))
    assert {turn.speaker for turn in turns} == {"SPEAKER_00", "SPEAKER_01"}
    found = changes(turns)
    assert len(found) == len(talk.changes), (found, talk.changes)
    assert all(abs(mine - true) <= TOLERANCE for mine, true in zip(found, talk.changes)), (found, talk.changes)
    # the speakers alternate as the voices do: SPEAKER_00 is the first voice heard
    voice_of = {"librispeech-1088": "SPEAKER_00", "librivox-reader": "SPEAKER_01"}
    middles = [((start + end) / 2, voice_of[voice]) for start, end, voice in talk.turns]
    assert all(any(turn.start <= middle <= turn.end and turn.speaker == speaker for turn in turns)
               for middle, speaker in middles)


def test_one_speaker_is_one_speaker(shared_audio):
    samples = load_audio(shared_audio / "libri-1088-134315-0000.wav")
    turns = find_turns(samples, whole(samples), SpeakerOptions())
    assert turns and {turn.speaker for turn in turns} == {"SPEAKER_00"}


def test_no_speech_has_no_turns():
    assert find_turns(np.zeros(16000 * 5, dtype=np.float32), [], SpeakerOptions(speakers=2)) == []


def test_speech_shorter_than_one_embedding_window_is_one_speaker(shared_audio):
    samples = load_audio(shared_audio / "LJ002-0020.wav")
    assert len(samples) < WINDOW_FRAMES * 160
    turns = find_turns(samples, whole(samples), SpeakerOptions(speakers=3))
    assert [turn.speaker for turn in turns] == ["SPEAKER_00"] and 0 <= turns[0].start < turns[0].end <= 1.6


def test_more_speakers_asked_than_speak_gives_those_who_speak(transcribed):
    talk, result = transcribed[0.5]
    assert {turn.speaker for turn in speaker_turns(talk.samples, result, SpeakerOptions(speakers=4))} == \
        {"SPEAKER_00", "SPEAKER_01"}


def test_windows_cover_the_speech_to_its_end():
    assert window_starts(100, 80) == [0]
    assert window_starts(400, 80) == [0, 80, 160, 240]
    starts = window_starts(401, 80)
    assert starts[-1] + WINDOW_FRAMES == 401 and starts[:-1] == [0, 80, 160, 240]


@pytest.mark.parametrize("value, expected", [(None, None), (False, None), (True, SpeakerOptions()),
                                             (3, SpeakerOptions(speakers=3)),
                                             (SpeakerOptions(speakers=2), SpeakerOptions(speakers=2))])
def test_diarize_values(value, expected):
    assert speaker_options(value) == expected


@pytest.mark.parametrize("value", [0, -1, "two", 2.5])
def test_bad_diarize_values_are_one_line_errors(value):
    from asr_specdec.errors import SpecdecError

    with pytest.raises(SpecdecError) as raised:
        speaker_options(value)
    assert "\n" not in str(raised.value)


def test_transcribe_options_take_diarize_as_given_or_overridden():
    from asr_specdec.whisper.options import TranscribeOptions

    assert TranscribeOptions(diarize=2).diarize == SpeakerOptions(speakers=2)
    assert TranscribeOptions(diarize=False).diarize is None
    assert TranscribeOptions().with_overrides(diarize=True).diarize == SpeakerOptions()


def test_an_unknown_encoder_precision_is_a_one_line_error():
    from asr_specdec.errors import SpecdecError

    with pytest.raises(SpecdecError, match="unknown encoder precision 'int4': choose one of auto, float32, bfloat16"):
        SpeakerOptions(encoder_precision="int4")
