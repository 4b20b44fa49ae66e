"""The commit policy of live transcription, on token lists: LocalAgreement-2 (commit the words on which two
consecutive hypotheses of a growing buffer agree) and the reading of a hypothesis into timed pieces.

A live hypothesis is decoded with timestamps: `<|t0|> text <|t1|><|t1|> text <|t2|> ...`. Its pieces (segments)
give the times at which the buffer may be cut once their text is committed. Nothing here knows a model; a
tokenizer enters only as `starts_word(token)` and `token_text(token)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Piece:
    """A segment of a hypothesis: its timestamps (steps from the buffer's start; None where missing), its text
    tokens, where its text sits among the hypothesis's text tokens, and the index after it in the hypothesis."""

    start: int | None
    end: int | None  # None: still open (the text runs on to the end of the audio heard so far)
    text: tuple[int, ...]
    text_end: int  # text tokens of the hypothesis up to the end of this piece
    end_index: int  # index in the generated tokens just after this piece (after its closing timestamp)


def text_tokens(tokens: list[int], end_of_text: int) -> list[int]:
    """The text of a hypothesis: every token below end-of-text (Whisper numbers all special tokens above it)."""
    return [token for token in tokens if token < end_of_text]


def pieces(tokens: list[int], timestamp_begin: int, end_of_text: int) -> list[Piece]:
    """The segments of a timestamped hypothesis, in order; pieces without text are left out."""
    found: list[Piece] = []
    start, text, text_count = None, [], 0
    for index, token in enumerate(tokens):
        if token >= timestamp_begin:
            step = token - timestamp_begin
            if text:
                found.append(Piece(start, step, tuple(text), text_count, index + 1))
                start, text = None, []
            else:
                start = step
        elif token < end_of_text:
            text.append(token)
            text_count += 1
    if text:
        found.append(Piece(start, None, tuple(text), text_count, len(tokens)))
    return found


def agreed_length(hypotheses: list[list[int]], starts_word: Callable[[int], bool]) -> int:
    """How many leading tokens every hypothesis shares, cut back to the end of a whole word: a boundary at k is
    one where each hypothesis either ends or starts a new word."""
    if not hypotheses or any(not hypothesis for hypothesis in hypotheses):
        return 0
    shared = 0
    first = hypotheses[0]
    while shared < len(first) and all(len(h) > shared and h[shared] == first[shared] for h in hypotheses[1:]):
        shared += 1
    for boundary in range(shared, 0, -1):
        if all(boundary == len(h) or starts_word(h[boundary]) for h in hypotheses):
            return boundary
    return 0


def committed_end(committed: list[int], text: list[int], starts_word: Callable[[int], bool]) -> int:
    """Where the already committed tokens end in a new hypothesis's text. Usually the text starts with them; when
    the model reworded some of them, the end is that of the prefix of the text closest to them (fewest token
    edits; the nearest length among equals), moved on to the end of a word."""
    if text[:len(committed)] == committed:
        return len(committed)
    # distances[e]: token edits between `committed` and text[:e], one row of committed at a time
    distances = list(range(len(text) + 1))
    for row, token in enumerate(committed, start=1):
        diagonal, distances[0] = distances[0], row
        for column in range(1, len(text) + 1):
            diagonal, distances[column] = distances[column], min(
                distances[column] + 1, distances[column - 1] + 1, diagonal + (text[column - 1] != token))
    end = min(range(len(text) + 1), key=lambda column: (distances[column], abs(column - len(committed))))
    while 0 < end < len(text) and not starts_word(text[end]):
        end += 1
    return end


def token_ends(hypothesis_pieces: list[Piece], text_count: int, token_text: Callable[[int], str],
               step_seconds: float, audio_seconds: float) -> list[float]:
    """An estimated end time (seconds in the buffer) for each of the first `text_count` text tokens: spread over
    its piece in proportion to characters (Whisper times segments, not words). An open piece ends with the audio."""
    ends: list[float] = []
    previous_end = 0.0
    for piece in hypothesis_pieces:
        begin = piece.start * step_seconds if piece.start is not None else previous_end
        finish = piece.end * step_seconds if piece.end is not None else audio_seconds
        finish = max(begin, min(finish, audio_seconds))
        lengths = [max(1, len(token_text(token))) for token in piece.text]
        total, done = sum(lengths), 0
        for length in lengths:
            done += length
            ends.append(begin + (finish - begin) * done / total)
        previous_end = finish
        if len(ends) >= text_count:
            break
    return ends[:text_count]


def shift(tokens: list[int], steps: int, timestamp_begin: int) -> list[int]:
    """A hypothesis moved `steps` timestamps earlier (the buffer lost that much audio from its start)."""
    return [max(timestamp_begin, token - steps) if token >= timestamp_begin else token for token in tokens]


def word_spans(tokens: list[int], starts_word: Callable[[int], bool]) -> list[tuple[int, int]]:
    """(begin, end) of each word in a run of text tokens that begins at a word's start."""
    starts = [index for index, token in enumerate(tokens) if index == 0 or starts_word(token)]
    return list(zip(starts, starts[1:] + [len(tokens)]))
