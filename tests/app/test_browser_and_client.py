"""The web app end to end, with real tiny.en weights: served on a free localhost port, driven through
gradio_client and raw HTTP, and in headless chromium (the `browser` tests)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import numpy as np
import pytest
import soundfile
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from app.server import free_port, launch, make_settings

pytestmark = pytest.mark.slow

AUDIO = Path(__file__).resolve().parents[2].parent / "shared" / "audio"
CLIP = AUDIO / "LJ002-0020.wav"  # "IN EIGHTEEN THIRTEEN": tiny.en writes "In 1813."
OTHER_CLIP = AUDIO / "librivox-0880.wav"  # "he was not an ill disposed young man"; tiny.en mishears "ill disposed"
LONG_CLIP = AUDIO / "libri-1088-134315-0000.wav"  # 16 s, over the 10 s limit below
MAX_UPLOAD_MB, MAX_SECONDS = 1, 10
CHROMIUM = Path("/usr/bin/chromium")


def normalized(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


@pytest.fixture(scope="module")
def server(tiny_en_dir) -> str:  # tiny_en_dir: the pack converted into this session's cache, where "tiny.en" loads from
    # two requests decode at once, so the concurrency test also runs two decoders on one shared model
    app = launch(make_settings("tiny.en", max_upload_mb=MAX_UPLOAD_MB, max_seconds=MAX_SECONDS),
                 port=free_port(), concurrency=2, block=False, quiet=True)
    yield app.local_url
    app.close()


@pytest.fixture(scope="module")
def client(server) -> Client:
    return Client(server, verbose=False)


@pytest.fixture
def corrupt_wav(tmp_path) -> Path:
    path = tmp_path / "corrupt.wav"
    path.write_text("this is a text file, not audio\n" * 20)
    return path


@pytest.fixture
def oversized_wav(tmp_path) -> Path:
    path = tmp_path / "oversized.wav"
    soundfile.write(path, np.zeros(int(1.5 * MAX_UPLOAD_MB * 1024 * 1024 / 4), dtype=np.float32), 16000,
                    subtype="FLOAT")
    return path


def assert_still_serves(client: Client) -> None:
    assert "1813" in client.predict(audio=handle_file(str(CLIP)), api_name="/transcribe")[0]


def test_transcribes_a_clip_with_telemetry_highlights_and_download(client):
    text, highlights, telemetry, download = client.predict(
        audio=handle_file(str(CLIP)), main="tiny.en", mode="quantized-self", draft_tokens=4, output_format="srt",
        api_name="/transcribe")
    assert normalized(text) == "in 1813"
    rows = dict(telemetry["data"])
    assert rows["mode"] == "quantized-self" and rows["models"] == "tiny.en"
    assert int(rows["tokens generated"]) >= 4  # " in", " 18", "13", "." and end-of-text
    drafted, accepted = map(int, rows["drafted / accepted"].split(" / "))
    assert 0 <= accepted <= drafted and drafted > 0
    assert rows["acceptance rate"] == f"{accepted / drafted:.0%}"
    assert float(rows["tokens per main pass"]) >= 1.0
    assert rows["audio"] == "1.54 s"
    assert "".join(piece["token"] for piece in highlights).strip() == text
    labels = {piece["class_or_confidence"] for piece in highlights}
    assert labels <= {"accepted from draft", "supplied by main model"} and labels
    srt = Path(download).read_text()  # subtitles are decoded with timestamps: the cue has the model's times
    start, end = re.match(r"1\n00:00:(\d\d,\d{3}) --> 00:00:(\d\d,\d{3})\n", srt).groups()
    assert float(start.replace(",", ".")) < 0.5 < float(end.replace(",", ".")) != 1.54 and "1813" in srt


def test_microphone_endpoint_transcribes_a_recording(client):
    text, _, telemetry, download = client.predict(audio=handle_file(str(CLIP)), mode="off", output_format="vtt",
                                                  api_name="/transcribe_microphone")
    assert "1813" in text
    assert dict(telemetry["data"])["drafted / accepted"] == "0 / 0"
    vtt = Path(download).read_text()
    assert vtt.startswith("WEBVTT\n") and "1813" in vtt


def test_compare_reports_times_speedup_and_identical_output(client):
    table, plain, speculative, highlights = client.predict(
        audio=handle_file(str(CLIP)), mode="prompt-lookup", api_name="/compare")
    rows = {row[0]: row[1:] for row in table["data"]}
    assert rows["mode"] == ["off", "prompt-lookup"]
    assert rows["identical output"][1] == "yes"
    assert all(value.endswith(" s") for value in rows["time"])
    assert re.fullmatch(r"\d+\.\d\dx", rows["speedup"][1])
    assert plain == speculative and "1813" in plain
    assert highlights


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


def test_too_long_audio_is_refused_with_the_limit_named(client):
    with pytest.raises(AppError, match=rf"lasts 16\.0 s; this server transcribes at most {MAX_SECONDS} s"):
        client.predict(audio=handle_file(str(LONG_CLIP)), api_name="/transcribe")
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


def test_a_library_error_reaches_the_user_as_its_message(client):
    with pytest.raises(AppError, match="English-only and cannot translate"):
        client.predict(audio=handle_file(str(CLIP)), task="translate", api_name="/transcribe")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver)")
    from app.browser import chromium

    driver = chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


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
