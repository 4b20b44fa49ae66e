"""The page's compute type, word timestamps, VAD, prompt and repetition rules reach the library, through the served
API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from app.compute_guide import offered_types

from .html_tables import table_rows
from .served import CLIP, LONG_CLIP, normalized

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(server) -> Client:
    return Client(server, verbose=False)


@pytest.fixture(scope="module")
def library(tiny_en_dir):
    """The library itself on the server's model, decoding as the requests below ask (plain, float32, timed)."""
    from asr_specdec.whisper import SpeculativeWhisper

    whisper = SpeculativeWhisper(str(tiny_en_dir), mode="off", compute_type="float32")
    return lambda **options: whisper.transcribe(str(LONG_CLIP), timestamps=True, **options).text.strip()


def test_words_with_times_in_the_segments_view_and_the_json_download(client):
    text, _, segments, _, telemetry, downloads = client.predict(
        audio=handle_file(str(CLIP)), mode="off", compute_type="float32", word_timestamps=True, vad_filter=True,
        api_name="/transcribe")
    assert normalized(text) == "in 1813"
    assert segments.count('class="word"') == 2 and 'title="0:0' in segments
    record = json.loads(Path(next(path for path in downloads if path.endswith(".json"))).read_text())
    assert record["compute_type"] == "float32"
    words = record["segments"][0]["words"]
    assert [normalized(word["word"]) for word in words] == ["in", "1813"]
    assert 0 <= words[0]["start"] < words[0]["end"] <= words[1]["start"] < words[1]["end"] <= 2.0
    assert dict(table_rows(telemetry)[1:])["mode"] == "off"


def test_without_word_timestamps_the_view_has_no_words(client):
    _, _, segments, _, _, _ = client.predict(audio=handle_file(str(CLIP)), mode="off", api_name="/transcribe")
    assert 'class="word"' not in segments and "1813" in segments


def test_a_compute_type_this_machine_cannot_run_is_refused_in_one_line(client):
    with pytest.raises(AppError) as raised:  # float16 is not offered on a CPU: Gradio refuses it before decoding
        client.predict(audio=handle_file(str(CLIP)), compute_type="float16", api_name="/transcribe")
    message = str(raised.value)
    assert "float16 is not in the list of choices" in message, message
    # the choices named are the ones this machine offers (int8 and bfloat16 decoders only with the native kernels)
    assert all(f"'{name}'" in message for name in offered_types("cpu")), message
    assert "--" not in message and "Traceback" not in message and "\n" not in message


# on LONG_CLIP tiny.en writes "I have given you proof, I have the greatest admiration": size 2 forbids the second
# "I have"; a penalty of 2 rewrites much more (the library's own output is the reference either way)
@pytest.mark.parametrize("option", [{"no_repeat_ngram_size": 2}, {"repetition_penalty": 2.0}])
def test_a_repetition_rule_gives_the_library_s_text_with_it(client, library, option):
    expected = library(**option)
    assert expected != library(), f"{option} does not change the text of {LONG_CLIP.name}"
    text = client.predict(audio=handle_file(str(LONG_CLIP)), mode="off", compute_type="float32", **option,
                          api_name="/transcribe")[0]
    assert text == expected


@pytest.mark.parametrize("option, expected", [
    ({"repetition_penalty": 0}, "the 'Repetition penalty' setting must be a number > 0, not 0.0"),
    ({"no_repeat_ngram_size": -1}, "the 'No repeat n-gram size' setting must be an integer >= 0, not -1"),
])
def test_a_repetition_option_out_of_range_is_refused_in_one_line_naming_the_field(client, option, expected):
    with pytest.raises(AppError) as raised:
        client.predict(audio=handle_file(str(CLIP)), **option, api_name="/transcribe")
    assert str(raised.value) == expected


@pytest.mark.browser
def test_the_page_refuses_a_penalty_out_of_range_in_one_line_naming_the_field(server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    from app.browser import error_messages, open_accordion, open_page, press_transcribe, upload

    open_page(browser, server)
    open_accordion(browser, "decoding-options")
    field = WebDriverWait(browser, 30).until(expected_conditions.element_to_be_clickable(
        (By.CSS_SELECTOR, "#repetition-penalty input")))
    field.clear()
    field.send_keys("0")
    upload(browser, CLIP)
    press_transcribe(browser)
    assert error_messages(browser) == "the 'Repetition penalty' setting must be a number > 0, not 0.0"
