"""The page as a user sees it, in headless chromium at desktop (1400 px) and phone (400 px) width, with real
tiny.en weights: the segments view, the language by name, no clipped table cell, audio input on the first
screen of a phone, seeking the audio from a segment, the Compare tab's table and downloads, and a microphone
recording's download names."""

from __future__ import annotations

import re
from datetime import datetime

import pytest

from .served import CLIP, LONG_CLIP

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TIME_RANGE = re.compile(r"(\d+):(\d\d\.\d) – (\d+):(\d\d\.\d)")


def segment_rows(browser) -> list[tuple[float, float, str]]:
    """(start, end, text) of each row in the File tab's segments view."""
    from selenium.webdriver.common.by import By

    rows = []
    for row in browser.find_elements(By.CSS_SELECTOR, "#file-segments tr.segment"):
        minutes, seconds, end_minutes, end_seconds = TIME_RANGE.fullmatch(
            row.find_element(By.CSS_SELECTOR, "td.time").text).groups()
        rows.append((60 * int(minutes) + float(seconds), 60 * int(end_minutes) + float(end_seconds),
                     row.find_element(By.CSS_SELECTOR, "td.text").text))
    return rows


def check_results(browser, text: str) -> list[tuple[float, float, str]]:
    """The File tab's segments, language and tables as a user must see them; its segment rows."""
    from selenium.webdriver.common.by import By

    from app.browser import clipped_cells

    rows = segment_rows(browser)
    assert rows and " ".join(row_text for _, _, row_text in rows) == text
    assert all(start < end for start, end, _ in rows)
    assert [start for start, _, _ in rows] == sorted(start for start, _, _ in rows)
    assert browser.find_element(By.CSS_SELECTOR, "#file-summary .language").text == "English"
    assert clipped_cells(browser) == []
    return rows


def test_desktop_shows_segments_and_clicking_one_plays_the_audio_from_its_start(server, browser):
    from selenium.webdriver.common.by import By

    from app.browser import playback_position, transcribe_in_page

    rows = check_results(browser, transcribe_in_page(browser, server, LONG_CLIP))
    assert len(rows) >= 2 and rows[1][0] > 1
    assert playback_position(browser, "file-audio") < 1
    browser.find_elements(By.CSS_SELECTOR, "#file-segments tr.segment")[1].click()
    assert rows[1][0] - 0.05 <= playback_position(browser, "file-audio") < rows[1][0] + 2


def test_phone_shows_the_audio_input_first_then_segments_without_clipping(server, browser):
    from selenium.webdriver.common.by import By

    from app.browser import open_page, set_viewport, transcribe_in_page

    set_viewport(browser, 400, 860)
    open_page(browser, server)
    upload_box = browser.find_element(By.CSS_SELECTOR, "#file-audio").rect
    assert upload_box["y"] + upload_box["height"] / 2 < 860  # on the first screen
    assert upload_box["y"] < browser.find_element(By.CSS_SELECTOR, "#settings").rect["y"]
    check_results(browser, transcribe_in_page(browser, server, CLIP))


def test_compare_at_phone_width_shows_the_whole_table_and_downloads(server, browser):
    from selenium.webdriver.common.by import By

    from app.browser import clipped_cells, open_page, open_tab, press_transcribe, set_viewport, transcript, upload

    set_viewport(browser, 400, 860)
    open_page(browser, server)
    open_tab(browser, "Compare")
    upload(browser, CLIP, elem_id="compare-audio")
    press_transcribe(browser, audio_id="compare-audio", button_id="compare")
    assert "1813" in transcript(browser, elem_id="speculative-transcript")
    header = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "#comparison th")]
    assert header == ["measure", "plain", "speculative"]
    downloads = [cell.get_attribute("aria-label") for cell in
                 browser.find_elements(By.CSS_SELECTOR, "#compare-download td.filename")]
    assert "LJ002-0020.srt" in downloads and "LJ002-0020.comparison.json" in downloads
    assert clipped_cells(browser) == []


def test_a_recording_is_transcribed_and_its_downloads_are_named_by_when_it_was_made(server, browser):
    from selenium.webdriver.common.by import By

    from app.browser import open_page, open_tab, press_transcribe, record, transcript

    open_page(browser, server)
    open_tab(browser, "Microphone")
    started = datetime.now().replace(microsecond=0)  # names carry whole seconds
    record(browser, 2.5)  # the fake microphone plays CLIP
    press_transcribe(browser, audio_id="mic-audio", button_id="transcribe-mic")
    assert "1813" in transcript(browser, elem_id="mic-transcript")
    names = [cell.get_attribute("aria-label") for cell in
             browser.find_elements(By.CSS_SELECTOR, "#mic-download td.filename")]
    stems = {re.fullmatch(r"(recording-.+)\.(txt|srt|vtt|json)", name).group(1) for name in names}
    assert len(names) == 4 and len(stems) == 1
    recorded = datetime.strptime(stems.pop(), "recording-%Y-%m-%d-%H%M%S")
    assert started <= recorded <= datetime.now()
