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


def committed_end(committed: list[int], text: list[int], starts_word: Callable[[int], bool],
                  token_text: Callable[[int], str] | None = None) -> int:
    """Where the already committed tokens end in a new hypothesis's text (`committed_match`'s first value)."""
    return committed_match(committed, text, starts_word, token_text)[0]


def committed_match(committed: list[int], text: list[int], starts_word: Callable[[int], bool],
                    token_text: Callable[[int], str] | None = None) -> tuple[int, int]:
    """(where the already committed tokens end in a new hypothesis's text, how many of them it holds).

    Usually the text starts with them; when the model reworded some of them, the end is that of the prefix of
    the text closest to them (fewest token edits; the nearest length among equals), moved on to the end of a
    word. With `token_text`, edits that change only case, spaces or punctuation cost little, so "woman he" is
    found in "woman, he" whole, not as "woman,". The second value is len(committed) unless the text ends before
    the committed tokens do (the model stopped short of words already committed): then it is the committed
    tokens that the whole text matches, up to the end of a word; the rest were not in this hypothesis."""
    if text[:len(committed)] == committed:
        return len(committed), len(committed)
    gap, change = _edit_costs(token_text, set(committed) | set(text))
    # distances[row][e]: edit cost between committed[:row] and text[:e]
    distances = [[0.0] * (len(text) + 1) for _ in range(len(committed) + 1)]
    for column in range(1, len(text) + 1):
        distances[0][column] = distances[0][column - 1] + gap(text[column - 1])
    for row, token in enumerate(committed, start=1):
        above, current = distances[row - 1], distances[row]
        current[0] = above[0] + gap(token)
        for column in range(1, len(text) + 1):
            current[column] = min(above[column] + gap(token), current[column - 1] + gap(text[column - 1]),
                                  above[column - 1] + change(token, text[column - 1]))
    last = distances[-1]
    end = min(range(len(text) + 1), key=lambda column: (round(last[column], 6), abs(column - len(committed))))
    held = len(committed)
    if end == len(text) and committed:
        # the most committed tokens the whole text matches as well as it matches all of them, or better
        held = max(range(len(committed) + 1), key=lambda row: (-round(distances[row][end], 6), row))
        while 0 < held < len(committed) and not starts_word(committed[held]):
            held += 1
    while 0 < end < len(text) and not starts_word(text[end]):
        end += 1
    return end, held


def _edit_costs(token_text: Callable[[int], str] | None, tokens: set[int]):
    """(cost of inserting or deleting a token, cost of replacing one by another): 1 each, except, when token
    texts are known, 0.25 for a token that is only punctuation or spaces, 0.1 for a token replaced by one that
    reads the same but for case, spaces and punctuation."""
    if token_text is None:
        return (lambda token: 1.0), (lambda first, second: 0.0 if first == second else 1.0)
    letters = {token: "".join(character for character in token_text(token).lower() if character.isalnum())
               for token in tokens}

    def gap(token: int) -> float:
        return 1.0 if letters[token] else 0.25

    def change(first: int, second: int) -> float:
        if first == second:
            return 0.0
        return 0.1 if letters[first] == letters[second] else 1.0

    return gap, change


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
