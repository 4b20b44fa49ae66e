"""The live commit policy on hand-made token lists: words, segments, LocalAgreement-2 and re-alignment."""

from __future__ import annotations

from asr_specdec.whisper.live import agreement

EOT, TS = 100, 200  # text below EOT, timestamps from TS (one step = 0.02 s)
WORD_STARTS = {1, 4, 6, 9}  # tokens whose text begins with a space


def starts_word(token: int) -> bool:
    return token in WORD_STARTS


def test_pieces_read_segments_with_their_times_and_places():
    tokens = [TS + 0, 1, 2, TS + 50, TS + 50, 4, 5, TS + 120, TS + 130, 6, EOT]
    found = agreement.pieces(tokens, TS, EOT)
    assert [(p.start, p.end, p.text, p.text_end, p.end_index) for p in found] == [
        (0, 50, (1, 2), 2, 4), (50, 120, (4, 5), 4, 8), (130, None, (6,), 5, 11)]
    assert agreement.text_tokens(tokens, EOT) == [1, 2, 4, 5, 6]


def test_agreement_commits_whole_shared_words_only():
    # " a-b c d" vs " a-b c e": the shared prefix ends inside no word, so [1, 2, 4] are committed
    assert agreement.agreed_length([[1, 2, 4, 6], [1, 2, 4, 9]], starts_word) == 3
    # the shared prefix [1, 2, 4] is followed by a word's continuation (5) in one of them: back to [1, 2]
    assert agreement.agreed_length([[1, 2, 4, 5], [1, 2, 4, 6]], starts_word) == 2
    # one hypothesis ends where the other goes on with a new word: the shared words are committed
    assert agreement.agreed_length([[1, 2, 4], [1, 2, 4, 6]], starts_word) == 3
    assert agreement.agreed_length([[1, 2], [4, 2]], starts_word) == 0
    assert agreement.agreed_length([[], [1]], starts_word) == 0


def test_committed_end_follows_a_reworded_hypothesis():
    committed = [1, 2, 4]
    assert agreement.committed_end(committed, [1, 2, 4, 6, 7], starts_word) == 3
    # the model rewrote the first word (1 -> 9) but kept the rest: the commit still ends after 4
    assert agreement.committed_end(committed, [9, 2, 4, 6, 7], starts_word) == 3
    # it dropped the first word: the end moves back with it
    assert agreement.committed_end(committed, [4, 6, 7], starts_word) == 1
    # a mapped end inside a word moves on to the word's end
    assert agreement.committed_end([1, 8], [1, 2, 3, 6], starts_word) == 3
    assert agreement.committed_end([], [1, 2], starts_word) == 0
    # " as you" committed, then " As you know, and as I have given you": the first two words, not the later " you"
    assert agreement.committed_end([1, 4], [9, 4, 6, 2, 1, 4, 6, 4, 9], starts_word) == 2


def test_shift_moves_timestamps_only_and_never_below_zero():
    assert agreement.shift([TS + 60, 1, TS + 100, EOT], 50, TS) == [TS + 10, 1, TS + 50, EOT]
    assert agreement.shift([TS + 20, 1], 50, TS) == [TS, 1]


def test_token_ends_spread_a_segment_by_characters():
    found = agreement.pieces([TS + 0, 1, 2, TS + 100, TS + 100, 4, EOT], TS, EOT)
    text = {1: " ab", 2: "c", 4: " d"}
    ends = agreement.token_ends(found, 3, text.__getitem__, 0.02, audio_seconds=5.0)
    assert ends[0] == 2.0 * 3 / 4 and ends[1] == 2.0
    assert ends[2] == 5.0  # the open segment runs to the end of the audio


def test_word_spans():
    assert agreement.word_spans([1, 2, 4, 6, 7], starts_word) == [(0, 2), (2, 3), (3, 5)]


def test_committed_end_reads_punctuation_and_case_changes_as_small_edits():
    texts = {1: " woman", 2: ",", 4: " he", 6: " might", 9: " He"}
    # " woman he" committed, then " woman, he might": the commit ends after " he" (unit costs tie at " woman,")
    assert agreement.committed_end([1, 4], [1, 2, 4, 6], starts_word) == 2
    assert agreement.committed_end([1, 4], [1, 2, 4, 6], starts_word, texts.__getitem__) == 3
    assert agreement.committed_match([1, 4], [1, 2, 9, 6], starts_word, texts.__getitem__) == (3, 2)


def test_committed_match_says_which_committed_words_the_hypothesis_stopped_short_of():
    texts = {1: " one", 2: "s", 4: " two", 5: ".", 6: " three"}
    # " ones two three" committed; the new hypothesis stops after " ones two.": " three" was not in it
    assert agreement.committed_match([1, 2, 4, 6], [1, 2, 4, 5], starts_word, texts.__getitem__) == (4, 3)
    # it stops inside a committed word: that word counts as held
    assert agreement.committed_match([1, 2, 4, 6], [1], starts_word, texts.__getitem__) == (1, 2)
    assert agreement.committed_match([1, 2, 4], [], starts_word, texts.__getitem__) == (0, 0)
    # a hypothesis that goes on past the committed words holds them all
    assert agreement.committed_match([1, 2, 4], [1, 2, 4, 6], starts_word) == (3, 3)
