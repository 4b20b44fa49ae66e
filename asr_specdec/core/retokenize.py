"""Moving a draft between two vocabularies through text: the part both universal drafters (Whisper and text
LMs) share."""

from __future__ import annotations

INCOMPLETE = "\ufffd"  # what decoding shows for a character whose bytes are split across tokens


def continuation_tokens(tokenizer, tokens: list[int], text: str, draft_text: str) -> list[int] | None:
    """`draft_text` in `tokenizer`'s vocabulary as the continuation of `tokens`, whose text is `text`.

    Re-encodes text + draft_text and keeps what follows `tokens`. Returns None when re-encoding changes
    `tokens` themselves (the tokenizer merges across the boundary): the main model has already committed to
    them, so no continuation in its vocabulary spells that joined text. `tokens` may end with the first bytes
    of a character that `text` leaves out and `draft_text` spells whole.
    """
    joined = tokenizer.encode(text + draft_text, add_special_tokens=False)
    if joined[: len(tokens)] == tokens:
        return joined[len(tokens):]
    return None


def text_after(tokenizer, context: list[int], new_tokens: list[int]) -> str:
    """The text `new_tokens` add after `context`, decoded in context: decoders that drop a leading space
    (SentencePiece) or split a character across byte tokens need the tokens before them. A trailing partial
    character is left out."""
    before = tokenizer.decode(context)
    after = tokenizer.decode(context + new_tokens)
    added = after[len(before):] if after.startswith(before) else tokenizer.decode(new_tokens)
    cut = added.find(INCOMPLETE)
    return added if cut < 0 else added[:cut]


def incomplete_tail(tokenizer, tokens: list[int], limit: int = 4) -> int:
    """How many of the last tokens spell only part of a character (0 when the text ends complete); byte-level
    vocabularies spell an emoji or a CJK character in up to four tokens."""
    for count in range(min(limit, len(tokens)) + 1):
        if not tokenizer.decode(tokens[: len(tokens) - count]).endswith(INCOMPLETE):
            return count
    return 0
