"""The Live tab in headless chromium: a 16-s clip played by the fake microphone streams into the tab, and
committed text appears before the clip has ended; stopping commits the rest. Then a microphone that sends
nothing or silence, through the handlers."""

from __future__ import annotations

import re

import numpy as np
import pytest
from gradio_client import Client, handle_file

from .served import LONG_CLIP, chromium_with_microphone, normalized

pytestmark = pytest.mark.slow
CLIP_SECONDS = 16.04
EARLY_WORDS = 6  # committed words judged: enough that one fragment cannot decide


@pytest.fixture(scope="module")
def live_chromium(tmp_path_factory):
    yield from chromium_with_microphone(tmp_path_factory.mktemp("live-chromium"), LONG_CLIP)


@pytest.fixture(scope="module")
def tiny_en_service(tiny_en_dir):
    from app.server import make_settings
    from app.service import TranscriptionService

    return TranscriptionService(make_settings("tiny.en"))


def committed_text(driver, at_least: int = 1) -> str:
    """The committed text, or "" while it has fewer than `at_least` words."""
    from selenium.webdriver.common.by import By

    text = " ".join(element.text for element in driver.find_elements(By.CSS_SELECTOR, "#live-text .committed"))
    return text if len(normalized(text).split()) >= at_least else ""


@pytest.mark.browser
def test_speech_from_the_microphone_is_committed_before_the_clip_ends(server, live_chromium):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from app.browser import open_page, open_tab, press_recorder

    open_page(live_chromium, server)
    open_tab(live_chromium, "Live")
    press_recorder(live_chromium, "record", "live-audio")
    # a loaded machine delays the chunks' delivery, so "before the clip ends" is read in the stream's own time:
    # the update that has committed a few words has heard less audio than the clip holds
    early = WebDriverWait(live_chromium, 90, poll_frequency=0.2).until(
        lambda driver: committed_text(driver, at_least=EARLY_WORDS))
    telemetry = live_chromium.find_element(By.CSS_SELECTOR, "#live-telemetry").text
    heard = float(re.search(r"audio heard ([0-9.]+) s", telemetry).group(1))
    assert heard < CLIP_SECONDS, (early, telemetry)
    assert "tokens from the last hypothesis" in telemetry and "main passes" in telemetry
    press_recorder(live_chromium, "stop", "live-audio")
    final = WebDriverWait(live_chromium, 90, poll_frequency=0.2).until(
        lambda driver: not driver.find_elements(By.CSS_SELECTOR, "#live-text .tentative") and committed_text(driver))
    assert normalized(final).startswith(normalized(early))  # committed text never changes, it only grows
    spoken = set(normalized(Client(server, verbose=False).predict(
        audio=handle_file(str(LONG_CLIP)), mode="off", api_name="/transcribe")[0]).split())
    # the fake microphone plays its clip in a loop from the moment chromium opens it, so a recording starts wherever
    # the loop is when Record is pressed (on a loaded machine 1.2 s in, "...as | I have given you"): its first word
    # may be a fragment's, heard as anything ("at given you", "by a given")
    words = normalized(early).split()[1:]
    assert sum(word in spoken for word in words) >= 0.7 * len(words), (early, spoken)


def test_a_microphone_that_sends_nothing_or_silence_or_stops_at_once_leaves_the_page_working(tiny_en_service):
    from app.live_tab import NOTHING_HEARD, RECORDING, LiveHandlers

    live = LiveHandlers(tiny_en_service)
    decoding = ("tiny.en", "quantized-self", None, "en", "transcribe", 8, False)
    assert live.stop(live.start()[0])[1] == NOTHING_HEARD  # stopped before any chunk arrived
    assert live.chunk(None, (48000, np.ones(24000, dtype=np.int16)), *decoding)[0] is None  # a chunk after Stop
    session, text, telemetry = live.chunk(RECORDING, None, *decoding)  # a chunk without audio
    assert session == RECORDING
    for _ in range(6):  # 3 s of silence in 0.5-s int16 chunks: streamed, never decoded, nothing shown
        session, text, telemetry = live.chunk(session, (48000, np.zeros(24000, dtype=np.int16)), *decoding)
    assert session is not None and session.totals["decodes"] == 0
    assert live.stop(session)[1] == NOTHING_HEARD


def test_chunks_never_wait_for_a_slow_decode_and_no_audio_is_dropped(tiny_en_service, shared_audio):
    """The decoder is held (a decode that takes as long as the test wants): every chunk handler still returns at
    once, the audio of every chunk reaches the stream, and the decodes that follow coalesce what arrived
    meanwhile; Stop waits for the running decode, then commits everything."""
    import threading

    from app.live_tab import RECORDING, LiveHandlers
    from asr_specdec.whisper.io.audio import load_audio

    live = LiveHandlers(tiny_en_service)
    decoding = ("tiny.en", "quantized-self", None, "en", "transcribe", 8, False)
    speech = (load_audio(shared_audio / "goforward.wav") * 32767).astype(np.int16)
    chunks = [speech[begin:begin + 8000] for begin in range(0, len(speech), 8000)]
    session, _, _ = live.chunk(RECORDING, (16000, chunks[0]), *decoding)
    held, entered, done, calls = threading.Event(), threading.Event(), threading.Event(), []
    update = session.stream.update

    def slow_update():
        calls.append(session.stream.received_seconds)
        entered.set()
        held.wait(60)
        try:
            return update()
        finally:
            done.set()

    session.stream.update = slow_update
    session, _, _ = live.chunk(session, (16000, chunks[1]), *decoding)
    assert entered.wait(30), "no decode started"
    for chunk in chunks[2:]:  # the decode is held: each of these returns without waiting for it
        session, _, _ = live.chunk(session, (16000, chunk), *decoding)
    assert not done.is_set() and len(calls) == 1  # every handler above returned while the decode was held
    assert session.stream.received_seconds == pytest.approx(len(speech) / 16000)
    held.set()
    final = live.stop(session)
    assert len(calls) <= 2  # what arrived during the held decode was decoded at most once more, not per chunk
    assert session.last.final and session.last.audio_seconds == pytest.approx(len(speech) / 16000)
    assert "forward" in final[1].lower()
