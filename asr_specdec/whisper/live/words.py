"""The words a live update commits, with their estimated ends in the stream, and the tokenizer's text of a token
(cached), which agreement.py and commit.py take as `token_text` and `starts_word`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..io import audio as audio_io
from . import agreement


@dataclass
class CommittedWord:
    text: str
    end: float  # estimated end in the stream, seconds (Whisper times segments; words are spread over them)


class TokenText:
    """The text of single tokens and whether each starts a word (with a space), asked once per token."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer
        self._text: dict[int, str] = {}
        self._starts: dict[int, bool] = {}

    def text_of(self, token: int) -> str:
        if token not in self._text:
            self._text[token] = self._tokenizer.decode([token])
        return self._text[token]

    def starts_word(self, token: int) -> bool:
        if token not in self._starts:
            self._starts[token] = self.text_of(token).startswith(" ")
        return self._starts[token]


def committed_words(found: list[agreement.Piece], text: list[int], start: int, end: int, buffer_seconds: float,
                    buffer_start: int, step: float, token_text: TokenText,
                    decode: Callable[[list[int]], str]) -> list[CommittedWord]:
    """The words of `text[start:end]` (a hypothesis's text tokens, its segments `found`), each ending where its
    last token is estimated to end (agreement.token_ends) in the stream; `decode` gives a word's text."""
    if end <= start:
        return []
    ends = agreement.token_ends(found, end, token_text.text_of, step, buffer_seconds)
    offset = buffer_start / audio_io.SAMPLE_RATE
    return [CommittedWord(decode(text[start + begin:start + finish]),
                          offset + ends[start + finish - 1] if start + finish - 1 < len(ends) else offset)
            for begin, finish in agreement.word_spans(text[start:end], token_text.starts_word)]
