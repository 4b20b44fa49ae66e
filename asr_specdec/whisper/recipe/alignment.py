"""Word timings from cross-attention: the alignment heads' attention over the audio, normalised, median-filtered
and averaged, then dynamic time warping from the first token at the first frame to the last token at the last.

The method is openai-whisper's (`timing.py`) and CTranslate2's `align`, which faster-whisper calls: the pass reads
<|startoftranscript|> [language, task] <|notimestamps|> text <|endoftext|>; each head's scores are softmaxed over
the window's real audio frames only, standardised over tokens, median-filtered over time (width 7) and averaged
over heads; the rows from <|notimestamps|> to the last text token (each predicts one text token, then end-of-
text) are aligned to time by DTW on the negated matrix. A word starts where the path first reaches its first
token and ends where it reaches the next word's.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

MEDIAN_FILTER_WIDTH = 7
# languages written without spaces between words: their words are split at character boundaries
UNSPACED_LANGUAGES = {"zh", "ja", "th", "lo", "my", "yue"}


@dataclass
class AlignedWord:
    """A word of a window, its tokens, its start/end in seconds from the window's start, and the mean probability
    the main model gave its tokens."""

    word: str
    tokens: list[int]
    start: float
    end: float
    probability: float


def median_filter(values: torch.Tensor, width: int) -> torch.Tensor:
    """Median over a sliding window of `width` (odd) along the last dimension, the edges reflected."""
    if values.shape[-1] <= width // 2:
        return values
    flat = values.reshape(1, -1, values.shape[-1])
    padded = F.pad(flat, (width // 2, width // 2), mode="reflect")
    return padded.unfold(-1, width, 1).median(dim=-1).values.reshape(values.shape)


def dynamic_time_warping(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row indices, column indices) of the cheapest monotonic path from [0, 0] to [-1, -1] through `cost`
    [rows, columns], each step down, right or diagonal (a diagonal step is preferred only when strictly cheaper,
    as openai's). Row by row, a row's running minimum is a prefix minimum, so each row is a few numpy calls."""
    rows, columns = cost.shape
    total = np.full((rows + 1, columns + 1), np.inf)
    total[0, 0] = 0.0
    for row in range(1, rows + 1):
        above = total[row - 1]
        # best entry into column j from the row above: diagonal (j-1) or straight down (j)
        entry = np.minimum(above[:-1], above[1:])
        sums = np.concatenate([[0.0], np.cumsum(cost[row - 1])])
        # total[row, j] = min over k <= j of (entry[k] + cost[k..j]): a prefix minimum of entry - sums
        total[row, 1:] = sums[1:] + np.minimum.accumulate(entry - sums[:-1])
    path_rows, path_columns = [], []
    row, column = rows, columns
    while row > 0 and column > 0:
        path_rows.append(row - 1)
        path_columns.append(column - 1)
        diagonal, up, left = total[row - 1, column - 1], total[row - 1, column], total[row, column - 1]
        if diagonal < up and diagonal < left:
            row, column = row - 1, column - 1
        elif up < diagonal and up < left:
            row -= 1
        else:
            column -= 1
    # the first row and column are unreachable except through [0, 0], so the path ends exactly there
    return np.array(path_rows[::-1]), np.array(path_columns[::-1])


def token_boundaries(head_scores: torch.Tensor, first_text_row: int, text_count: int, audio_frames: int,
                     seconds_per_column: float) -> np.ndarray:
    """Times (seconds) at which the DTW path first reaches each of the `text_count` + 1 rows from
    `first_text_row` (the <|notimestamps|> input, predicting the first text token) of the pass's attention.

    head_scores: [heads, tokens, frames] query-key scores of the alignment heads; `audio_frames` the encoder
    positions that hold real audio (the rest of the window is padding)."""
    weights = head_scores[:, :, :max(1, audio_frames)].float().softmax(dim=-1)
    std, mean = torch.std_mean(weights, dim=-2, keepdim=True, unbiased=False)
    weights = (weights - mean) / std.clamp_min(1e-12)
    weights = median_filter(weights, MEDIAN_FILTER_WIDTH)
    matrix = weights.mean(dim=0)[first_text_row: first_text_row + text_count + 1]
    text_indices, time_indices = dynamic_time_warping(-matrix.double().cpu().numpy())
    jumps = np.diff(text_indices, prepend=-1).astype(bool)
    return time_indices[jumps] * seconds_per_column


def split_words(tokenizer, tokens: list[int], end_of_text: int, language: str | None) -> list[tuple[str, list[int]]]:
    """(word, its tokens) for text tokens, as openai splits them: at spaces and punctuation, or at every complete
    character for languages written without spaces."""
    pieces = _split_characters(tokenizer, tokens)
    if language in UNSPACED_LANGUAGES:
        return pieces
    words: list[tuple[str, list[int]]] = []
    for piece, piece_tokens in pieces:
        starts_word = (piece_tokens[0] >= end_of_text or piece.startswith(" ")
                       or piece.strip() in string.punctuation or not words)
        if starts_word:
            words.append((piece, list(piece_tokens)))
        else:
            words[-1] = (words[-1][0] + piece, words[-1][1] + piece_tokens)
    return words


def _split_characters(tokenizer, tokens: list[int]) -> list[tuple[str, list[int]]]:
    """Tokens grouped so that each group decodes to whole characters (a character may span several tokens)."""
    full = tokenizer.decode(tokens)
    pieces, current, offset = [], [], 0
    for token in tokens:
        current.append(token)
        text = tokenizer.decode(current)
        broken = text.find("\ufffd")
        if broken < 0 or (offset + broken < len(full) and full[offset + broken] == "\ufffd"):
            pieces.append((text, current))
            offset += len(text)
            current = []
    return pieces


def align_words(tokenizer, text_tokens: list[int], boundaries: np.ndarray, token_probs: list[float],
                end_of_text: int, language: str | None) -> list[AlignedWord]:
    """Words with their times: `boundaries` from token_boundaries (one per text token, then end-of-text),
    `token_probs` the main model's probability of each text token."""
    if not text_tokens:
        return []
    words = split_words(tokenizer, text_tokens, end_of_text, language)
    aligned, begin = [], 0
    for word, tokens in words:
        end = begin + len(tokens)
        aligned.append(AlignedWord(word, tokens, float(boundaries[begin]), float(boundaries[end]),
                                   float(np.mean(token_probs[begin:end]))))
        begin = end
    return aligned
