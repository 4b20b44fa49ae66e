"""lean_processor.LeanTokenizer encodes text without special tokens (a prompt, hotwords, a prefix) and looks tokens
up with the `tokenizers` library: the ids transformers' own tokenizer gives, on both packs' vocabularies
(multilingual base, English-only tiny.en), for text of every kind a prompt may hold."""

from __future__ import annotations

import pytest

from asr_specdec.whisper.runtime.lean_processor import LeanTokenizer

TEXTS = ["Please call me back.", " leading space", "  two spaces and a trailing one ", "Glossary: ComfyUI, PyTorch",
         "Nombres: José, Zoë, Łódź; 東京と大阪。Привет, мир!", "numbers 1,234.56 and 3:30 pm",
         "emoji 🙂 and tabs\tand\nlines",
         "<|en|> written as text", "a literal <|0.00|> timestamp", "<|endoftext|>", "", "don't won't I'm"]


@pytest.mark.parametrize("pack", ["base", "tiny.en"])
def test_text_encodes_to_transformers_ids(pack, request):
    from transformers import AutoTokenizer

    directory = request.getfixturevalue("base_dir" if pack == "base" else "tiny_en_dir")
    lean, full = LeanTokenizer(directory), AutoTokenizer.from_pretrained(directory)
    for text in TEXTS + [" " + text.strip() for text in TEXTS]:
        assert lean.encode(text, add_special_tokens=False) == full.encode(text, add_special_tokens=False), text
    assert lean.encode("hello") == full.encode("hello")  # with special tokens: transformers' own
    assert lean.get_added_vocab() == full.get_added_vocab() and len(lean.get_added_vocab()) > 1500
    tokens = ["<|startoftranscript|>", "<|0.00|>", "<|30.00|>", "hello", "Ġworld", "<|en|>", "no such token"]
    for token in tokens:
        assert lean.convert_tokens_to_ids(token) == full.convert_tokens_to_ids(token), token
    assert lean.convert_tokens_to_ids(tokens[:-1]) == full.convert_tokens_to_ids(tokens[:-1])
    assert lean._full is not None
