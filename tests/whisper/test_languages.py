"""Whisper's language table (asr_specdec/whisper/runtime/languages.py) is transformers' own, name for name and in the
order of the language tokens, so that naming a language needs no import of transformers."""

from __future__ import annotations


def test_the_language_table_is_transformers():
    from transformers.models.whisper.tokenization_whisper import LANGUAGES, TO_LANGUAGE_CODE

    from asr_specdec.whisper.runtime.languages import CODES, NAMES

    assert list(NAMES.items()) == list(LANGUAGES.items())
    assert CODES == TO_LANGUAGE_CODE


def test_the_server_answers_with_a_languages_name():
    from asr_specdec.server.responses import language_name

    assert language_name("en") == "english" and language_name("yue") == "cantonese"
    assert language_name("xx") == "xx" and language_name(None) is None
