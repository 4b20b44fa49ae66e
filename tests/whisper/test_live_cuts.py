"""Where a live stream cuts its buffer (live/cuts.py), from hand-made hypotheses, aligned words and audio."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asr_specdec.whisper.live import cuts, speech
from asr_specdec.whisper.live.agreement import Piece

STEP = 0.02  # seconds of one timestamp step
RATE = 16000
EOT = 100


@dataclass
class Word:  # as AlignedWord: its text, tokens and seconds in the buffer
    word: str
    tokens: list
    start: float
    end: float


def frames_with_speech(seconds: float, spans: list[tuple[float, float]]) -> speech.SpeechFrames:
    """Hand-made VAD: speech in `spans` (seconds) of a stream `seconds` long, from sample 0."""
    frames = speech.SpeechFrames()
    count = int(seconds * RATE) // speech.FRAME_SAMPLES
    middles = (np.arange(count) + 0.5) * speech.FRAME_SAMPLES / RATE
    frames._probabilities = np.array([any(a <= t < b for a, b in spans) for t in middles], dtype=np.float32)
    return frames


PIECES = [Piece(0, 100, (1, 2), 2, 3), Piece(100, 300, (3, 4), 4, 6), Piece(300, 500, (5,), 5, 9),
          Piece(500, None, (6,), 6, 10)]


def test_a_long_buffer_is_cut_after_its_last_committed_segment_a_full_one_after_its_last_complete():
    assert cuts.segment_to_cut(PIECES, committed=4, buffer_seconds=12, step=STEP, trim_seconds=15,
                               max_buffer_seconds=25) is None  # short: no cut
    assert cuts.segment_to_cut(PIECES, 4, 16, STEP, 15, 25) == PIECES[1]  # committed up to the second
    assert cuts.segment_to_cut(PIECES, 1, 16, STEP, 15, 25) is None  # nothing settled, not full
    assert cuts.segment_to_cut(PIECES, 1, 26, STEP, 15, 25) == PIECES[2]  # full: the last complete one
    # never past speech the decode skipped (heard_end: text tokens before it)
    assert cuts.segment_to_cut(PIECES, 1, 26, STEP, 15, 25, heard_end=4) == PIECES[1]
    # a segment that ends past the audio heard is not complete
    assert cuts.segment_to_cut(PIECES, 5, 8, STEP, 5, 25) == PIECES[1]


def test_a_cut_inside_a_segment_falls_after_the_words_before_the_skipped_speech():
    tokens = [EOT + 1, 1, 2, 3, EOT + 40, EOT + 41, 4, 5, EOT]  # timestamps are above end-of-text
    aligned = [Word(" one", [1], 0.0, 0.4), Word(" two", [2, 3], 0.4, 0.9), Word(" three", [4], 1.0, 1.3),
               Word(" four", [5], 1.3, 1.7)]
    piece = cuts.after_words(tokens, 3, aligned, EOT, STEP)
    assert (piece.end, piece.text_end, piece.end_index) == (45, 3, 4)  # 0.9 s = 45 steps; after token 3


def test_the_cut_moves_back_to_the_quietest_step_after_the_last_word():
    seconds = 4.0
    samples = np.full(int(seconds * RATE), 0.1, dtype=np.float32)
    samples[int(1.62 * RATE):int(1.64 * RATE)] = 0.0  # the quietest 20 ms: 1.62 s, step 81
    aligned = [Word(" hello", [1], 0.2, 0.8), Word(" there", [2], 0.8, 1.5), Word(".", [3], 1.5, 2.6)]
    frames = frames_with_speech(seconds, [(0.2, 1.5), (2.5, 3.5)])
    piece = Piece(0, 150, (1, 2, 3), 3, 5)  # Whisper ended the segment at 3.0 s
    moved = cuts.at_quiet_after_last_word(piece, aligned, samples, 0, frames, STEP)
    assert moved.end == 81 and moved.text_end == 3
    # speech starting again after the pause bounds the search: a quieter step past it is not chosen
    samples[int(1.62 * RATE):int(1.64 * RATE)] = 0.1
    samples[int(2.6 * RATE):int(2.62 * RATE)] = 0.0
    bounded = cuts.at_quiet_after_last_word(piece, aligned, samples, 0, frames, STEP)
    assert bounded.end == 75  # equal loudness up to the onset at 2.5 s: its first step (else 130, at 2.6 s)
    # words that do not end with the piece keep Whisper's time
    assert cuts.at_quiet_after_last_word(Piece(0, 150, (1, 2), 2, 4), aligned[:1], samples, 0, frames,
                                         STEP) == Piece(0, 150, (1, 2), 2, 4)


def test_speech_skipped_at_the_start_is_cut_at_the_middle_of_the_pause_before_the_first_word():
    frames = frames_with_speech(6.0, [(0.0, 1.5), (2.5, 4.0)])
    aligned = [Word(" later", [1], 0.0, 3.0)]  # the first word's span swallows the first utterance
    head = cuts.skipped_head(aligned, 0, int(6.0 * RATE), frames, STEP)
    assert abs(head / RATE - 2.0) < 0.05  # the middle of the 1.5-2.5 s pause
    short = frames_with_speech(6.0, [(0.0, 0.3), (2.5, 4.0)])  # too little speech before the pause to be a word
    assert cuts.skipped_head(aligned, 0, int(6.0 * RATE), short, STEP) == int(3.0 * RATE)


RULES = cuts.CutRules(step=STEP, trim_seconds=15, max_buffer_seconds=25, end_of_text=EOT)


def plan(text, found, committed, heard_end, seconds, *, final=False, head=False, tokens=None, aligned=None,
         frames=None):
    samples = np.zeros(int(seconds * RATE), dtype=np.float32)
    return cuts.place(tokens or list(text), list(text), found, committed, heard_end, final=final, head=head,
                      aligned=aligned, samples=samples, start=0, buffer_seconds=min(seconds, 30),
                      frames=frames or frames_with_speech(seconds, []), rules=RULES)


def test_a_full_buffer_is_cut_at_its_last_complete_segment_and_commits_what_it_cuts_away():
    placed = plan([1, 2, 3, 4, 5, 6], PIECES, committed=1, heard_end=None, seconds=26)
    assert placed.cut == PIECES[2] and placed.committed == 5 and not placed.decode_again and placed.head is None
    assert plan([1, 2, 3, 4, 5, 6], PIECES, 1, None, seconds=12) == cuts.CutPlan(None, 1)  # short: nothing


def test_a_full_buffer_without_a_complete_segment_is_committed_whole():
    placed = plan([1, 2], [Piece(0, None, (1, 2), 2, 4)], committed=0, heard_end=None, seconds=26)
    assert placed.cut is None and placed.whole and placed.committed == 2


def test_speech_skipped_at_the_start_of_a_full_buffer_is_decoded_alone_next():
    frames = frames_with_speech(26.0, [(0.0, 1.5), (2.5, 4.0)])
    aligned = [Word(" later", [1], 0.0, 3.0)]
    placed = plan([1], [Piece(0, 150, (1,), 1, 3)], committed=0, heard_end=0, seconds=26, aligned=aligned,
                  frames=frames)
    assert placed.cut is None and placed.decode_again and not placed.whole
    assert abs(placed.head / RATE - 2.0) < 0.05


def test_the_last_decode_stopping_short_of_speech_is_cut_after_its_words_and_decoded_again():
    tokens = [EOT + 1, 1, 2, 3, EOT]
    aligned = [Word(" one", [1], 0.0, 0.3), Word(" two", [2], 0.3, 0.6), Word(" three", [3], 0.6, 1.0)]
    found = [Piece(0, None, (1, 2, 3), 3, 4)]
    short = frames_with_speech(4.0, [(0.0, 1.0), (1.5, 3.5)])  # 2 s of speech after the last word
    placed = plan([1, 2, 3], found, 3, None, seconds=4.0, final=True, tokens=tokens, aligned=aligned, frames=short)
    assert placed.cut is not None and placed.cut.end == 50 and placed.decode_again and placed.committed == 3
    done = frames_with_speech(4.0, [(0.0, 1.0)])  # nothing after it: the stream's end commits and cuts nothing
    assert plan([1, 2, 3], found, 3, None, seconds=4.0, final=True, tokens=tokens, aligned=aligned,
                frames=done) == cuts.CutPlan(None, 3)
