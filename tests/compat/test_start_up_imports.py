"""A process that loads a model and transcribes never imports transformers where it has no need of it: importing its
Whisper tables alone took ~1.3 s and 20-odd MB, which a short file's whole transcription is not much more than.
Languages, by code or by name, are looked up in the package's own table (runtime/languages.py), a prompt's text is
encoded with the `tokenizers` library (runtime/lean_processor.py), and a first load's conversion, which needs
transformers, runs in a process of its own (weights/conversion_process.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from asr_specdec.errors import SpecdecError

SCRIPT = """
import sys
from asr_specdec import WhisperModel

def loaded():
    return sorted(name for name in sys.modules if name.split(".")[0] == "transformers")

model = WhisperModel("base")
steps = {"load": loaded()}
segments, _ = model.transcribe("samples/message.wav", language="English")
steps["language given"] = (" ".join(segment.text for segment in segments), loaded())
segments, info = model.transcribe("samples/message.wav")
steps["language detected"] = (info.language, " ".join(segment.text for segment in segments), loaded())
segments, _ = model.transcribe("samples/message.wav", initial_prompt="Voicemail.", hotwords="message")
steps["prompt and hotwords"] = (" ".join(segment.text for segment in segments), loaded())
from asr_specdec import SpeculativeWhisper

universal = SpeculativeWhisper("base", mode="universal", assistant_model="tiny.en", language="en")
result = universal.transcribe("samples/message.wav")
steps["universal"] = (result.text, result.stats.drafted_tokens, loaded())
print(repr(steps))
"""


def test_a_first_load_and_a_transcription_with_a_language_or_a_prompt_import_no_transformers(tmp_path):
    """In a cache without `base` (its first load converts it, in a child process: conversion_process.py), then
    again in that cache."""
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "native").symlink_to(Path(os.environ["ASR_SPECDEC_CACHE"]) / "native")  # the session's kernel build
    env = {**os.environ, "ASR_SPECDEC_CACHE": str(cache)}
    for load in ("first", "warm"):
        done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        steps = eval(done.stdout.strip().splitlines()[-1])
        assert steps["load"] == [], load
        text, modules = steps["language given"]
        assert "call me back" in text and modules == [], load
        language, text, modules = steps["language detected"]
        assert language == "en" and "call me back" in text and modules == [], load
        text, modules = steps["prompt and hotwords"]
        assert "call me back" in text and modules == [], load
        text, drafted, modules = steps["universal"]  # tiny.en's tokenizer beside base's
        assert "call me back" in text and drafted > 0 and modules == [], load
    assert any((cache / "packs").iterdir())


def test_a_language_by_name_or_code_gives_its_token_and_an_unknown_one_says_so():
    from asr_specdec import WhisperModel

    tokens = WhisperModel("base").speculative.tokens
    english = tokens.language_ids["<|en|>"]
    assert tokens.language_token("en") == tokens.language_token("English") == tokens.language_token("<|en|>") == english
    assert tokens.language_token("castilian") == tokens.language_ids["<|es|>"]  # a name transformers' table aliases
    with pytest.raises(SpecdecError, match="unknown language 'klingon'"):
        tokens.language_token("klingon")
