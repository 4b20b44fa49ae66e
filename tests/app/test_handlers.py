"""app/handlers.py and app/__main__.py: errors become one line for the user, never a traceback."""

from __future__ import annotations

import logging

import gradio as gr
import pytest

from app.__main__ import main
from app.handlers import options_from, shown_to_user
from asr_specdec.errors import AudioError


def test_a_user_error_is_shown_verbatim():
    with pytest.raises(gr.Error) as raised, shown_to_user():
        raise AudioError("clip.wav: empty file (0 bytes)")
    assert raised.value.message == "clip.wav: empty file (0 bytes)"


def test_a_bug_is_logged_and_the_user_sees_only_that_it_happened(caplog):
    with caplog.at_level(logging.ERROR), pytest.raises(gr.Error) as raised, shown_to_user():
        raise KeyError("internal detail")
    assert raised.value.message == "unexpected server error; the details are in the server log"
    assert "internal detail" in caplog.text


def test_auto_language_means_detect():
    assert options_from("base", "off", None, "auto", "transcribe", 5.0, False)[0].language is None
    assert options_from("base", "off", None, "de", "transcribe", 5.0, False)[0].language == "de"


def test_the_page_settings_split_into_the_decoder_and_this_call_s_recipe():
    options, recipe = options_from("base", "off", None, "auto", "transcribe", 5.0, False, "int8", True, True,
                                   " Mr. Quilter ", "")
    assert options.compute_type == "int8" and options.normalized().compute_type == "int8"
    assert recipe.as_arguments() == {"word_timestamps": True, "vad_filter": True, "initial_prompt": "Mr. Quilter"}
    assert options_from("base", "off", None, "auto", "transcribe", 5.0, False)[1].as_arguments() == {
        "word_timestamps": False, "vad_filter": False}
    beams = options_from("base", "off", None, "auto", "transcribe", 5.0, False, "int8", False, False, "", "", 5.0)[1]
    assert beams.as_arguments() == {"word_timestamps": False, "vad_filter": False, "beam_size": 5}
    rules = options_from("base", "off", None, "auto", "transcribe", 5.0, False, "int8", False, False, "", "", 0,
                         1.5, 3)[1]
    assert rules.as_arguments() == {"word_timestamps": False, "vad_filter": False, "repetition_penalty": 1.5,
                                    "no_repeat_ngram_size": 3}
    # emptied number fields are the defaults (off); a value out of range is kept for the library to refuse
    assert options_from("base", "off", None, "auto", "transcribe", 5.0, False, "int8", False, False, "", "", 0,
                        None, None)[1].as_arguments() == {"word_timestamps": False, "vad_filter": False}
    assert options_from("base", "off", None, "auto", "transcribe", 5.0, False, "int8", False, False, "", "", 0,
                        0, -1)[1].as_arguments()["no_repeat_ngram_size"] == -1


def test_an_unloadable_default_model_stops_start_up_with_one_line(capsys, tmp_path):
    assert main(["--main", str(tmp_path / "missing-model"), "--port", "1"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and errors[0].startswith("error: no such model directory")
