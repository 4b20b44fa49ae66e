"""Moving a draft between two vocabularies through text: the part both universal drafters (Whisper and text
LMs) share."""

from __future__ import annotations


def continuation_tokens(tokenizer, tokens: list[int], text: str, draft_text: str) -> list[int] | None:
    """`draft_text` in `tokenizer`'s vocabulary as the continuation of `tokens`, whose text is `text`.

    Re-encodes text + draft_text and keeps what follows `tokens`. Returns None when re-encoding changes
    `tokens` themselves (the tokenizer merges across the boundary): the main model has already committed to
    them, so no continuation in its vocabulary spells that joined text.
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
    cut = added.find("\ufffd")
    return added if cut < 0 else added[:cut]
