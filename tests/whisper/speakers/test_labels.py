"""Speakers put on words and segments: a segment whose words change speaker is cut there; one without words takes
the speaker it overlaps most; a channel's segments all take its speaker."""

from __future__ import annotations

from asr_specdec.whisper.io.formats import Segment
from asr_specdec.whisper.recipe.words import Word
from asr_specdec.whisper.speakers.labels import all_spoken_by, labelled, speaker_at, without_words
from asr_specdec.whisper.speakers.turns import Turn

TURNS = [Turn(0.0, 2.0, "SPEAKER_00"), Turn(2.2, 4.0, "SPEAKER_01"), Turn(6.0, 7.0, "SPEAKER_00")]


def words(*spans) -> tuple[Word, ...]:
    return tuple(Word(f" w{index}", start, end, 0.9, tokens=(100 + index,)) for index, (start, end) in enumerate(spans))


def test_a_word_takes_the_turn_it_overlaps_most_or_the_nearest():
    assert speaker_at(TURNS, 1.5, 2.5) == "SPEAKER_00"  # 0.5 s in the first, 0.3 s in the second
    assert speaker_at(TURNS, 1.9, 2.9) == "SPEAKER_01"
    assert speaker_at(TURNS, 4.5, 4.8) == "SPEAKER_01"  # in no turn: the nearest
    assert speaker_at(TURNS, 5.5, 5.8) == "SPEAKER_00"
    assert speaker_at([], 0, 1) is None


def test_a_segment_whose_words_change_speaker_is_cut_where_they_do():
    segment = Segment(0.0, 3.5, " w0 w1 w2 w3", tokens=(1, 100, 101, 102, 103, 2),
                      words=words((0.1, 0.8), (0.9, 1.8), (2.3, 2.9), (3.0, 3.5)), avg_logprob=-0.2)
    first, second = labelled([segment], TURNS)
    assert (first.start, first.end, first.text, first.speaker) == (0.0, 1.8, " w0 w1", "SPEAKER_00")
    assert (second.start, second.end, second.text, second.speaker) == (2.3, 3.5, " w2 w3", "SPEAKER_01")
    assert first.tokens == (100, 101) and second.tokens == (102, 103)
    assert [word.speaker for word in first.words + second.words] == ["SPEAKER_00"] * 2 + ["SPEAKER_01"] * 2
    assert first.avg_logprob == second.avg_logprob == -0.2


def test_one_speaker_keeps_the_segment_whole_and_a_segment_without_words_takes_the_most_overlap():
    segment = Segment(0.0, 1.8, " w0 w1", words=words((0.1, 0.8), (0.9, 1.8)))
    assert labelled([segment], TURNS) == [Segment(0.0, 1.8, " w0 w1", words=tuple(
        Word(word.word, word.start, word.end, word.probability, speaker="SPEAKER_00") for word in segment.words),
        speaker="SPEAKER_00")]
    assert labelled([Segment(1.0, 3.9, " no words")], TURNS)[0].speaker == "SPEAKER_01"


def test_a_channel_s_segments_take_its_speaker_and_words_can_be_dropped():
    spoken = all_spoken_by([Segment(0, 1, " a", words=words((0, 1)))], "SPEAKER_01")
    assert spoken[0].speaker == "SPEAKER_01" and spoken[0].words[0].speaker == "SPEAKER_01"
    assert without_words(spoken)[0].words == () and without_words(spoken)[0].speaker == "SPEAKER_01"
