"""Diarization's speech comes from the transcript: the words widened and joined, their pauses found from the sound."""

from __future__ import annotations

import numpy as np

from asr_specdec.whisper.io.formats import Segment
from asr_specdec.whisper.recipe.words import Word
from asr_specdec.whisper.speakers.speech import SpeechFromWords, pauses, speech_of

RATE = 16000


def segment(*spans, words=True) -> Segment:
    start, end = spans[0][0], spans[-1][1]
    return Segment(start, end, "", words=tuple(Word(" w", a, b, 0.9) for a, b in spans) if words else ())


def test_speech_is_the_words_widened_and_joined_where_they_overlap():
    segments = [segment((1.0, 1.5), (1.8, 2.4)), segment((3.0, 3.5)), segment((9.9, 10.4))]
    # 1.5 -> 1.8: 0.3 s apart, widened by 0.2 s each: one stretch; 2.4 -> 3.0: two; the last is cut at the end
    assert speech_of(segments, 10 * RATE) == [(0.8 * RATE, 2.6 * RATE), (2.8 * RATE, 3.7 * RATE),
                                              (9.7 * RATE, 10 * RATE)]
    assert speech_of(segments[:1], 10 * RATE, SpeechFromWords(word_pad_seconds=0.1)) == \
        [(0.9 * RATE, 1.6 * RATE), (1.7 * RATE, 2.5 * RATE)]


def test_a_segment_without_words_is_one_word_and_no_words_is_no_speech():
    assert speech_of([segment((4.0, 6.0), words=False)], 10 * RATE) == [(3.8 * RATE, 6.2 * RATE)]
    assert speech_of([], 10 * RATE) == []


def test_long_quiet_stretches_are_pauses_less_what_is_kept_and_short_ones_are_not():
    power = np.ones(300)
    power[100:150] = 1e-4  # 0.5 s, 40 dB down: a pause, 0.1 s kept either side
    power[200:220] = 1e-4  # 0.2 s: shorter than a pause
    paused = pauses(power)
    assert np.flatnonzero(paused).tolist() == list(range(110, 140))
    assert not pauses(np.where(paused, 1e-2, 1.0)).any()  # 20 dB down is not quiet
    edge = np.r_[np.full(50, 1e-4), np.ones(100)]
    assert np.flatnonzero(pauses(edge)).tolist() == list(range(40))  # at the speech's start only its inner side kept
