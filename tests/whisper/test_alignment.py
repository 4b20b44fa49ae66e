"""The word-timing arithmetic: DTW against the textbook cell-by-cell recurrence, the median filter, token
boundaries from a known attention pattern, word splitting, punctuation merging and the segment clean-ups."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from asr_specdec.whisper.recipe.alignment import (
    AlignedWord,
    align_words,
    dynamic_time_warping,
    median_filter,
    split_words,
    token_boundaries,
)
from asr_specdec.whisper.recipe.words import merge_punctuation, place_words


def reference_dtw(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cell-by-cell DTW with openai's tie rule (diagonal only when strictly cheapest, then up, else left)."""
    rows, columns = cost.shape
    total = np.full((rows + 1, columns + 1), np.inf)
    trace = np.zeros((rows + 1, columns + 1), dtype=int)
    total[0, 0] = 0
    for j in range(1, columns + 1):
        for i in range(1, rows + 1):
            c0, c1, c2 = total[i - 1, j - 1], total[i - 1, j], total[i, j - 1]
            if c0 < c1 and c0 < c2:
                best, step = c0, 0
            elif c1 < c0 and c1 < c2:
                best, step = c1, 1
            else:
                best, step = c2, 2
            total[i, j] = cost[i - 1, j - 1] + best
            trace[i, j] = step
    i, j, path = rows, columns, []
    while i > 0 and j > 0:
        path.append((i - 1, j - 1))
        i, j = (i - 1, j - 1) if trace[i, j] == 0 else (i - 1, j) if trace[i, j] == 1 else (i, j - 1)
    path = np.array(path[::-1])
    return path[:, 0], path[:, 1]


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (6, 1), (5, 9), (12, 40), (30, 31)])
def test_dtw_equals_the_cell_by_cell_recurrence(shape):
    for seed in range(5):
        cost = np.random.default_rng(seed).standard_normal(shape)
        rows, columns = dynamic_time_warping(cost)
        expected_rows, expected_columns = reference_dtw(cost)
        assert rows.tolist() == expected_rows.tolist() and columns.tolist() == expected_columns.tolist()
        assert rows[0] == columns[0] == 0 and rows[-1] == shape[0] - 1 and columns[-1] == shape[1] - 1


def test_median_filter_is_a_sliding_median_with_reflected_edges():
    values = torch.randn(2, 3, 20)
    filtered = median_filter(values, 7)
    padded = np.pad(values.numpy(), ((0, 0), (0, 0), (3, 3)), mode="reflect")
    expected = np.stack([np.median(padded[..., index:index + 7], axis=-1) for index in range(20)], axis=-1)
    assert np.allclose(filtered.numpy(), expected)
    assert median_filter(values[..., :3], 7).shape == (2, 3, 3)


def test_token_boundaries_follow_a_known_attention_diagonal():
    # 2 start rows, 4 text tokens + end-of-text: text token t looks at frames 10t..10t+9 of 50 real frames
    heads, tokens, frames = 2, 2 + 4 + 1, 80
    scores = torch.full((heads, tokens, frames), -5.0)
    for token in range(5):
        scores[:, 1 + token, 10 * token: 10 * token + 10] = 5.0
    boundaries = token_boundaries(scores, first_text_row=1, text_count=4, audio_frames=50, seconds_per_column=0.02)
    assert boundaries.tolist() == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])


class CharacterTokenizer:
    """One token per character (ids = code points); 1000 and up are special."""

    def decode(self, tokens):
        return "".join(chr(token) for token in tokens if token < 1000)


def test_words_split_at_spaces_and_punctuation_and_take_their_tokens_times():
    tokenizer = CharacterTokenizer()
    tokens = [ord(character) for character in " Hi, you"]
    words = split_words(tokenizer, tokens, 1000, "en")
    assert [word for word, _ in words] == [" Hi", ",", " you"]
    boundaries = np.arange(len(tokens) + 1) * 0.1
    aligned = align_words(tokenizer, tokens, boundaries, [0.5] * len(tokens), 1000, "en")
    assert [(word.word, word.start, word.end) for word in aligned] == [
        (" Hi", 0.0, pytest.approx(0.3)), (",", pytest.approx(0.3), pytest.approx(0.4)),
        (" you", pytest.approx(0.4), pytest.approx(0.8))]
    assert [word for word, _ in split_words(tokenizer, tokens, 1000, "ja")] == list(" Hi, you")


def word(text: str, start: float, end: float, tokens: int = 1) -> AlignedWord:
    return AlignedWord(text, list(range(tokens)), start, end, 0.9)


def test_punctuation_joins_its_word_and_token_counts_stay():
    merged = merge_punctuation([word(' "', 0, 0.1), word("Hello", 0.1, 0.5), word(",", 0.5, 0.6),
                                word(" world", 0.6, 1.0), word(".", 1.0, 1.1)])
    assert [entry.word for entry in merged] == ["", ' "Hello,', "", " world.", ""]
    assert sum(len(entry.tokens) for entry in merged) == 5


def test_segments_take_their_words_bounds_and_words_land_in_their_segment():
    aligned = [word(" one", 0.50, 0.80), word(" two", 0.80, 1.10), word(" three", 5.00, 5.40, tokens=2)]
    placed, last_speech = place_words([(30.0, 32.0, 2), (34.0, 36.0, 2)], aligned, offset=30.0, last_speech=30.0)
    assert [(segment.start, segment.end) for segment in placed] == [(30.5, 31.1), (35.0, 35.4)]
    assert [[entry.word for entry in segment.words] for segment in placed] == [[" one", " two"], [" three"]]
    assert last_speech == 35.4


def test_a_long_first_word_after_a_pause_is_shortened():
    aligned = [word(" so", 0.0, 3.0), word(" we", 3.0, 3.2), word(" go", 3.2, 3.4), word(" on", 3.4, 3.6)]
    placed, _ = place_words([(10.0, 13.6, 4)], aligned, offset=10.0, last_speech=0.0)
    first = placed[0].words[0]
    assert first.end == 13.0 and first.start == pytest.approx(13.0 - 0.4)
    assert placed[0].start == first.start
