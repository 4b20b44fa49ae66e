"""hallucination_silence_threshold: the anomaly score and the rule (openai-whisper's and faster-whisper's, written
out by hand below), and the sequential loop on scripted windows with words: a hallucinated segment in silence is
dropped and decoding restarts where the rule says, while the same windows without the option keep it."""

from __future__ import annotations

import pytest
import torch

from asr_specdec.errors import SpecdecError
from asr_specdec.whisper.longform.hallucination import (
    Verdict,
    check_sequential,
    is_anomaly,
    judge_window,
    word_anomaly_score,
)
from asr_specdec.whisper.longform.sequential import Frames, TimedTokens, WindowOutcome, transcribe_sequential
from asr_specdec.whisper.options import TranscribeOptions
from asr_specdec.whisper.recipe.alignment import AlignedWord
from asr_specdec.whisper.recipe.words import Word, place_words

TB, EOT = 50364, 50257  # base's <|0.00|> and end-of-text


def ts(seconds: float) -> int:
    return TB + round(seconds / 0.02)


def word(start: float, end: float, probability: float = 0.9, text: str = " w") -> Word:
    return Word(text, start, end, probability)


def test_anomaly_score_by_hand():
    assert word_anomaly_score(word(0, 0.5)) == 0
    assert word_anomaly_score(word(0, 0.5, probability=0.1)) == 1
    assert word_anomaly_score(word(0, 0.033)) == pytest.approx(1.5)  # (0.133 - 0.033) * 15
    assert word_anomaly_score(word(0, 3.5, probability=0.1)) == pytest.approx(2.5)  # 1 + (3.5 - 2)
    assert not is_anomaly([word(0, 0.4), word(0.4, 0.8, probability=0.1)])  # 1 < 2 words
    assert is_anomaly([word(0, 0.4, probability=0.1), word(0.4, 0.8, probability=0.1)])  # 2 >= 2 - 0.01
    assert is_anomaly([word(0, 6.0)] + [word(6, 6.5)] * 9)  # 4 >= 3, whatever the count
    assert not is_anomaly([word(0, 0.4)] * 8 + [word(0, 0.4, probability=0.1)] * 8)  # only the first 8 count
    assert is_anomaly([word(0, 0.4, probability=0.1), word(0.4, 0.41, text=".")])  # punctuation is not scored
    assert not is_anomaly([])


def segment(start: float, end: float, *words: Word) -> TimedTokens:
    return TimedTokens(start, end, (), words=tuple(words))


GOOD = (word(1.0, 1.5), word(1.5, 2.0))


def bad(start: float) -> tuple[Word, Word]:
    return word(start, start + 0.3, 0.05), word(start + 0.3, start + 0.6, 0.05)


@pytest.mark.parametrize("case, segments, verdict", [
    ("speech only", [segment(1, 2, *GOOD)], Verdict()),
    ("first segment hallucinated after 5 s of silence: the window goes, restart at it",
     [segment(65, 65.6, *bad(65)), segment(66, 67, word(66, 67))], Verdict(0, 65, True)),
    ("first segment hallucinated within the threshold of the window's start: kept by that test, then judged "
     "with silence before (< 2 s into the window) and after (> 2 s to the next words)",
     [segment(61, 61.6, *bad(61)), segment(70, 71, word(70, 71))], Verdict(0, 61)),
    ("hallucination between speech with silence around it: it and what follows go",
     [segment(61, 62, word(61, 62)), segment(70, 70.6, *bad(70)), segment(80, 81, word(80, 81))], Verdict(1, 70)),
    ("hallucination close to speech before it: kept",
     [segment(61, 62, word(61, 62)), segment(62.5, 63.1, *bad(62.5)), segment(80, 81, word(80, 81))], Verdict()),
    ("hallucination with speech right after it: kept",
     [segment(61, 62, word(61, 62)), segment(70, 70.6, *bad(70)), segment(71, 72, word(71, 72))], Verdict()),
    ("hallucination followed by another: silence after",
     [segment(61, 62, word(61, 62)), segment(70, 70.6, *bad(70)), segment(71, 71.6, *bad(71))], Verdict(1, 70)),
    ("hallucination ending near the audio's end: restart at the end",
     [segment(61, 62, word(61, 62)), segment(88, 88.6, *bad(88))], Verdict(1, 89.5)),
])
def test_rule_by_hand(case, segments, verdict):
    # a window from 60 s holding 29.5 s of audio (the audio ends at 89.5 s); speech last ended at 59 s
    assert judge_window(segments, 60.0, 29.5, 90.0, 89.5, 59.0, threshold=2.0) == verdict, case


def test_restart_is_at_least_one_second_past_the_window_start():
    segments = [segment(60.2, 60.8, *bad(60.2)), segment(70, 71, word(70, 71))]
    assert judge_window(segments, 60.0, 30, 90.0, 200, 10.0, threshold=2.0) == Verdict(0, 61.0)


class WordScript:
    """Answers each window with scripted tokens and the words of its text (times from the window's start)."""

    def __init__(self, answers: list[tuple[list[int], list[AlignedWord]]]):
        self.answers, self.offsets = list(answers), []

    def __call__(self, window: torch.Tensor, previous: list[int] | None) -> WindowOutcome:
        tokens, words = self.answers.pop(0)
        return WindowOutcome(list(tokens), words=words)


def aligned(text_token: int, start: float, end: float, probability: float) -> AlignedWord:
    return AlignedWord(f" t{text_token}", [text_token], start, end, probability)


def run(script: list, threshold: float | None, seconds: float = 60.0):
    output = transcribe_sequential(torch.zeros(1, 2, round(seconds * 100)), WordScript(script), TB, EOT, Frames(),
                                   place_words=place_words, hallucination_silence_threshold=threshold)
    return output.window_offsets, [(segment.start, segment.end, segment.tokens[1:-1]) for segment in output.segments]


# window at 0 s: speech 0.5-1.5 s, then after 9 s of silence two improbable words at 10.5 s, then speech at 25 s
FIRST = ([ts(0.5), 11, 12, ts(1.5), ts(10.5), 13, 14, ts(11.1), ts(25), 15, ts(26), EOT],
         [aligned(11, 0.5, 1.0, 0.9), aligned(12, 1.0, 1.5, 0.9), aligned(13, 10.5, 10.8, 0.05),
          aligned(14, 10.8, 11.1, 0.05), aligned(15, 25.0, 26.0, 0.9)])
# the window decoded again from 10.5 s: the speech at 25 s alone
AGAIN = ([ts(14.5), 15, ts(15.5), EOT], [aligned(15, 14.5, 15.5, 0.9)])
# the next window (AGAIN ended on a single timestamp: 30 s after it; without the option, 30 s after FIRST)
LAST = ([ts(0), 16, ts(1), EOT], [aligned(16, 0.0, 1.0, 0.9)])


def test_a_hallucination_in_silence_is_dropped_and_decoding_restarts_at_it():
    offsets, segments = run([FIRST, AGAIN, LAST], threshold=2.0)
    assert offsets == [0.0, 10.5, 40.5]
    assert segments == [(0.5, 1.5, (11, 12)), (25.0, 26.0, (15,)), (40.5, 41.5, (16,))]


def test_without_the_option_the_same_windows_keep_it():
    offsets, segments = run([FIRST, LAST], threshold=None)
    assert offsets == [0.0, 30.0]
    assert segments == [(0.5, 1.5, (11, 12)), (10.5, 11.1, (13, 14)), (25.0, 26.0, (15,)), (30.0, 31.0, (16,))]


def test_a_window_opening_with_a_hallucination_after_silence_is_decoded_again_from_it():
    opening = ([ts(8), 13, 14, ts(8.6), ts(20), 15, ts(21), EOT],
               [aligned(13, 8.0, 8.3, 0.05), aligned(14, 8.3, 8.6, 0.05), aligned(15, 20.0, 21.0, 0.9)])
    again = ([ts(12), 15, ts(13), EOT], [aligned(15, 12.0, 13.0, 0.9)])
    offsets, segments = run([opening, again, LAST], threshold=2.0)
    assert offsets == [0.0, 8.0, 38.0]
    assert segments == [(20.0, 21.0, (15,)), (38.0, 39.0, (16,))]


def test_the_option_is_checked():
    with pytest.raises(SpecdecError, match="hallucination_silence_threshold must be"):
        TranscribeOptions(hallucination_silence_threshold=-1.0, word_timestamps=True)
    options = TranscribeOptions().with_overrides(hallucination_silence_threshold=2, word_timestamps=True)
    assert options.hallucination_silence_threshold == 2
    with pytest.raises(SpecdecError, match="needs word timestamps"):
        TranscribeOptions().with_overrides(hallucination_silence_threshold=2)
    check_sequential(True)
    with pytest.raises(SpecdecError, match="sequential decoding only"):
        check_sequential(False)
