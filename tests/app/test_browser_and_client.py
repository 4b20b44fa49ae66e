"""The web app end to end, with real tiny.en weights: served on a free localhost port, driven through
gradio_client and raw HTTP, and in headless chromium (the `browser` tests)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from .html_tables import table_rows
from .served import CLIP, LONG_CLIP, MAX_SECONDS, MAX_UPLOAD_MB, OTHER_CLIP, normalized

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(server) -> Client:
    return Client(server, verbose=False)


@pytest.fixture
def corrupt_wav(tmp_path) -> Path:
    path = tmp_path / "corrupt.wav"
    path.write_text("this is a text file, not audio\n" * 20)
    return path


@pytest.fixture
def too_long_wav(tmp_path) -> Path:
    samples, rate = soundfile.read(LONG_CLIP, dtype="float32")
    path = tmp_path / "too-long.wav"
    soundfile.write(path, np.tile(samples, 2)[:int((MAX_SECONDS + 5) * rate)], rate)
    return path


@pytest.fixture
def oversized_wav(tmp_path) -> Path:
    path = tmp_path / "oversized.wav"
    soundfile.write(path, np.zeros(int(1.5 * MAX_UPLOAD_MB * 1024 * 1024 / 4), dtype=np.float32), 16000,
                    subtype="FLOAT")
    return path


def assert_still_serves(client: Client) -> None:
    assert "1813" in client.predict(audio=handle_file(str(CLIP)), api_name="/transcribe")[0]


def test_transcribes_a_clip_with_segments_language_telemetry_highlights_and_downloads(client):
    text, summary, segments, highlights, telemetry, downloads = client.predict(
        audio=handle_file(str(CLIP)), main="tiny.en", mode="quantized-self", draft_tokens=4, api_name="/transcribe")
    assert normalized(text) == "in 1813"
    assert 'Language: <strong class="language">English</strong> (English-only model)' in summary
    rows = dict(table_rows(telemetry)[1:])
    assert rows["mode"] == "quantized-self" and rows["models"] == "tiny.en" and rows["language"] == "English"
    assert int(rows["tokens generated"]) >= 4  # " in", " 18", "13", "." and end-of-text
    drafted, accepted = map(int, rows["drafted / accepted"].split(" / "))
    assert 0 <= accepted <= drafted and drafted > 0
    assert rows["acceptance rate"] == f"{accepted / drafted:.0%}"
    assert float(rows["tokens per main pass"]) >= 1.0
    assert rows["audio"] == "1.54 s"
    assert "".join(piece["token"] for piece in highlights).strip() == text
    labels = {piece["class_or_confidence"] for piece in highlights}
    assert labels <= {"accepted from the draft", "main model's own token"} and labels
    (time_range, segment_text), = table_rows(segments)[1:]
    start, end = (float(clock.split(":")[1]) for clock in time_range.split(" – "))
    assert start < 0.5 < end <= 1.6 and segment_text == text
    names = {Path(path).name: Path(path) for path in downloads}
    assert set(names) == {"LJ002-0020.txt", "LJ002-0020.srt", "LJ002-0020.vtt", "LJ002-0020.json"}
    srt = names["LJ002-0020.srt"].read_text()  # the cue carries the model's own times, as the segments view does
    cue = re.match(r"1\n00:00:(\d\d,\d{3}) --> 00:00:(\d\d,\d{3})\n", srt).groups()
    assert [round(float(time.replace(",", ".")), 1) for time in cue] == [start, end] and "1813" in srt
    assert json.loads(names["LJ002-0020.json"].read_text())["text"] == " " + text


def test_microphone_endpoint_transcribes_a_recording_and_names_downloads_by_its_time(client):
    text, _, _, _, telemetry, downloads = client.predict(audio=handle_file(str(CLIP)), mode="off",
                                                         api_name="/transcribe_microphone")
    assert "1813" in text
    assert dict(table_rows(telemetry)[1:])["drafted / accepted"] == "0 / 0"
    names = sorted(Path(path).name for path in downloads)
    assert all(re.fullmatch(r"recording-\d{4}-\d\d-\d\d-\d{6}\.(txt|srt|vtt|json)", name) for name in names), names
    vtt = next(Path(path) for path in downloads if path.endswith(".vtt")).read_text()
    assert vtt.startswith("WEBVTT\n") and "1813" in vtt


def test_compare_reports_times_speedup_and_identical_output_and_offers_downloads(client):
    summary, table, plain, speculative, highlights, downloads = client.predict(
        audio=handle_file(str(CLIP)), mode="prompt-lookup", api_name="/compare")
    rows = {row[0]: row[1:] for row in table_rows(table)}
    assert rows["mode"] == ["off", "prompt-lookup"]
    assert rows["identical output"][1] == "yes"
    assert all(value.endswith(" s") for value in rows["time"])
    assert re.fullmatch(r"\d+\.\d\dx", rows["speedup"][1])
    assert plain == speculative and "1813" in plain
    assert "the same text" in summary and highlights
    names = {Path(path).name: Path(path) for path in downloads}
    assert {"LJ002-0020.srt", "LJ002-0020.comparison.json"} <= set(names)
    report = json.loads(names["LJ002-0020.comparison.json"].read_text())
    assert report["plain"]["text"].strip() == plain and report["speculative"]["mode"] == "prompt-lookup"


def test_assistant_mode_works_with_the_assistant_the_page_offers(server, client):
    from app.pairing import assistant_choices
    from app.profiles import profile_from_directory
    from asr_specdec.weights.whisper_models import resolve_model_dir

    offered = assistant_choices("tiny.en", "assistant", ("tiny.en", "base"),
                                lambda spec: profile_from_directory(resolve_model_dir(spec)).vocab_size)
    assert offered == ["tiny.en"]  # base has another tokenizer
    text, summary, _, _, telemetry, _ = client.predict(audio=handle_file(str(CLIP)), mode="assistant",
                                                       assistant=offered[0], api_name="/transcribe")
    rows = dict(table_rows(telemetry)[1:])
    assert normalized(text) == "in 1813" and rows["mode"] == "assistant" and rows["acceptance rate"] == "100%"
    assert 'class="note"' not in summary


def test_an_assistant_with_another_tokenizer_drafts_in_universal_mode_and_the_page_says_so(client):
    text, summary, _, _, telemetry, _ = client.predict(audio=handle_file(str(CLIP)), mode="assistant",
                                                       assistant="base", api_name="/transcribe")
    rows = dict(table_rows(telemetry)[1:])
    assert normalized(text) == "in 1813"
    assert rows["mode"] == "universal" and rows["models"] == "tiny.en + base"
    assert "base has another tokenizer than tiny.en, so it drafted in universal mode" in summary


def test_users_at_once_all_get_their_own_transcript(server):
    requests = [(CLIP, "quantized-self"), (OTHER_CLIP, "quantized-self"), (OTHER_CLIP, "off")]
    users = [Client(server, verbose=False) for _ in requests]
    jobs = [user.submit(audio=handle_file(str(clip)), mode=mode, api_name="/transcribe")
            for user, (clip, mode) in zip(users, requests)]
    first, second, plain = (job.result(timeout=180)[0] for job in jobs)
    assert normalized(first) == "in 1813"
    assert normalized(second).startswith("he was not an") and normalized(second).endswith("young man")
    assert plain == second


def test_corrupt_file_gives_a_one_line_error_and_the_app_keeps_serving(client, corrupt_wav):
    with pytest.raises(AppError) as raised:
        client.predict(audio=handle_file(str(corrupt_wav)), api_name="/transcribe")
    message = str(raised.value)
    assert message.startswith("corrupt.wav: not a recognised audio file"), message
    assert "Traceback" not in message and "/tmp" not in message and "\n" not in message
    assert_still_serves(client)


def test_too_long_audio_is_refused_with_the_limit_named(client, too_long_wav):
    limit = rf"lasts {MAX_SECONDS + 5}\.0 s; this server transcribes at most {MAX_SECONDS} s"
    with pytest.raises(AppError, match=limit):
        client.predict(audio=handle_file(str(too_long_wav)), api_name="/transcribe")
    assert_still_serves(client)


def test_too_large_upload_is_refused_by_server_and_client(server, client, oversized_wav):
    with oversized_wav.open("rb") as file:
        response = httpx.post(f"{server}gradio_api/upload", files={"files": (oversized_wav.name, file)}, timeout=60)
    assert response.status_code == 413 and "maximum allowed size of 1048576 bytes" in response.text
    with pytest.raises(ValueError, match="exceeds the maximum file size"):
        client.predict(audio=handle_file(str(oversized_wav)), api_name="/transcribe")
    assert_still_serves(client)


def test_a_path_outside_the_upload_area_is_never_opened(server, client):
    request = {"data": [{"path": str(CLIP), "meta": {"_type": "gradio.FileData"}}]}
    event = httpx.post(f"{server}gradio_api/call/transcribe", json=request, timeout=30).json()["event_id"]
    stream = httpx.get(f"{server}gradio_api/call/transcribe/{event}", timeout=60).text
    assert "event: error" in stream and "1813" not in stream
    assert_still_serves(client)


def test_translation_is_not_offered_with_an_english_only_model(client):
    with pytest.raises(AppError, match=r"'translate' .* is not in the list of choices: \['transcribe'\]"):
        client.predict(audio=handle_file(str(CLIP)), main="tiny.en", task="translate", api_name="/transcribe")


@pytest.mark.browser
def test_browser_uploads_a_clip_and_reads_the_transcript(server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    from app.browser import transcribe_in_page

    text = transcribe_in_page(browser, server, CLIP)
    screenshot = tmp_path / "transcribed.png"
    browser.save_screenshot(str(screenshot))
    assert normalized(text) == "in 1813"
    assert "acceptance rate" in browser.find_element(By.CSS_SELECTOR, "#file-telemetry").text
    assert "1813" in browser.find_element(By.CSS_SELECTOR, "#file-highlights").text.replace(" ", "").replace("\n", "")
    assert screenshot.stat().st_size > 10_000


@pytest.mark.browser
def test_browser_shows_upload_errors_and_keeps_serving(server, browser, corrupt_wav, oversized_wav, tmp_path):
    from app.browser import error_messages, press_transcribe, transcribe_in_page, upload

    browser.get(server)
    upload(browser, corrupt_wav)
    press_transcribe(browser)
    assert "corrupt.wav: not a recognised audio file" in error_messages(browser)
    browser.get(server)
    upload(browser, oversized_wav)
    assert "exceed the maximum allowed size" in error_messages(browser)
    browser.save_screenshot(str(tmp_path / "refused.png"))
    assert "1813" in transcribe_in_page(browser, server, CLIP)
