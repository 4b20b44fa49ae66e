"""Drive the page in headless Debian chromium: upload a clip, press Transcribe, read what the page shows."""

from __future__ import annotations

import base64
import time
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# as root chromium needs --no-sandbox; the rest keep a headless run quiet and off the network
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--autoplay-policy=no-user-gesture-required")
PHONE_WIDTH = 500  # below this, the page is laid out as on a phone (headless windows are at least 500 px wide)


def fake_microphone(audio: Path) -> tuple[str, ...]:
    """Flags that make chromium's microphone play `audio` in a loop, allowed without asking."""
    return ("--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
            f"--use-file-for-fake-audio-capture={Path(audio).resolve()}")


def chromium(profile_dir: Path, width: int = 1400, height: int = 1100, extra_flags: tuple[str, ...] = ()
             ) -> webdriver.Chrome:
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, *extra_flags, f"--user-data-dir={profile_dir}",
                 f"--window-size={max(width, PHONE_WIDTH)},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    set_viewport(driver, width, height)
    return driver


def set_viewport(driver: webdriver.Chrome, width: int, height: int) -> None:
    """Lay the page out `width` px wide (a phone below 500 px, which a headless window cannot be made)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < PHONE_WIDTH})


def save_full_page(driver: webdriver.Chrome, path: Path, max_height: int | None = None) -> None:
    """A PNG of the whole page (its top `max_height` px if given), not just the part in the window."""
    width, height = driver.execute_script(
        "return [document.documentElement.clientWidth, document.documentElement.scrollHeight]")
    height = min(height, max_height or height)
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    Path(path).write_bytes(base64.b64decode(shot["data"]))


def open_page(driver: webdriver.Chrome, url: str, timeout: float = 60) -> None:
    """Load the page and wait until it has drawn its File tab."""
    driver.get(url)
    WebDriverWait(driver, timeout).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, "#file-audio")))


def open_accordion(driver: webdriver.Chrome, elem_id: str, timeout: float = 60) -> None:
    """Open the accordion `elem_id` once the page has drawn it (it is drawn after the File tab, so the page can be
    open without it yet)."""
    WebDriverWait(driver, timeout).until(expected_conditions.element_to_be_clickable(
        (By.CSS_SELECTOR, f"#{elem_id} button"))).click()


def transcribe_in_page(driver: webdriver.Chrome, url: str, audio: Path, timeout: float = 120) -> str:
    """Open the page, upload `audio` in the File tab, press Transcribe; the transcript once it appears."""
    open_page(driver, url, timeout)
    upload(driver, audio, timeout)
    press_transcribe(driver, timeout)
    return transcript(driver, timeout)


def upload(driver: webdriver.Chrome, audio: Path, timeout: float = 60, elem_id: str = "file-audio") -> None:
    file_input = WebDriverWait(driver, timeout).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, f"#{elem_id} input[type=file]")))
    file_input.send_keys(str(Path(audio).resolve()))


def press_transcribe(driver: webdriver.Chrome, timeout: float = 60, audio_id: str = "file-audio",
                     button_id: str = "transcribe-file") -> None:
    # the button sends the file only once the upload has finished and the player shows it
    WebDriverWait(driver, timeout).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, f"#{audio_id} audio, #{audio_id} wave")))
    driver.find_element(By.CSS_SELECTOR, f"#{button_id}").click()


def transcript(driver: webdriver.Chrome, timeout: float = 120, elem_id: str = "file-transcript") -> str:
    box = driver.find_element(By.CSS_SELECTOR, f"#{elem_id} textarea")
    WebDriverWait(driver, timeout).until(lambda _: box.get_attribute("value").strip())
    return box.get_attribute("value").strip()


def record(driver: webdriver.Chrome, seconds: float, elem_id: str = "mic-audio", timeout: float = 30) -> None:
    """Record `seconds` from the microphone in the audio component `elem_id`, then stop."""
    press_recorder(driver, "record", elem_id, timeout)
    time.sleep(seconds)
    press_recorder(driver, "stop", elem_id, timeout)


def press_recorder(driver: webdriver.Chrome, label: str, elem_id: str, timeout: float = 30) -> None:
    """Press the audio component's button whose text or label holds `label` ("record", "stop")."""
    WebDriverWait(driver, timeout).until(expected_conditions.element_to_be_clickable(
        (By.XPATH, f"//*[@id='{elem_id}']//button[contains(translate(normalize-space(.), 'RS', 'rs'), "
                   f"'{label}') or contains(translate(@aria-label, 'RS', 'rs'), '{label}')]"))).click()


def open_tab(driver: webdriver.Chrome, name: str, timeout: float = 30) -> None:
    WebDriverWait(driver, timeout).until(expected_conditions.element_to_be_clickable(
        (By.XPATH, f"//button[@role='tab' and normalize-space()='{name}']"))).click()


def error_messages(driver: webdriver.Chrome, timeout: float = 60) -> str:
    """The text of the error notices the page shows, once there is one."""
    def shown(_):
        return "\n".join(toast.text for toast in driver.find_elements(By.CSS_SELECTOR, "[data-testid='toast-text']")
                         if toast.text.strip())

    return WebDriverWait(driver, timeout).until(shown)


# table cells and what is inside them (and the page itself) whose content is wider than the box showing it
CLIPPED_SCRIPT = """
const clipped = [];
const cells = "td, th, td *, th *, [role=gridcell], [role=gridcell] *, [role=columnheader], [role=columnheader] *";
for (const cell of document.querySelectorAll(cells)) {
  if (cell.offsetParent !== null && cell.scrollWidth > cell.clientWidth + 1)
    clipped.push(`${cell.textContent.trim().slice(0, 60)} (${cell.scrollWidth} > ${cell.clientWidth} px)`);
}
const page = document.documentElement;
if (page.scrollWidth > page.clientWidth + 1) clipped.push(`the page (${page.scrollWidth} > ${page.clientWidth} px)`);
return clipped;
"""


def clipped_cells(driver: webdriver.Chrome) -> list[str]:
    """Visible table cells whose content does not fit their width, and the page if it scrolls sideways."""
    return driver.execute_script(CLIPPED_SCRIPT)


def playback_position(driver: webdriver.Chrome, audio_id: str) -> float | None:
    """Where the player of the audio component `audio_id` stands, in seconds (its media element lives in a
    shadow root)."""
    return driver.execute_script("""
        const root = document.getElementById(arguments[0]);
        const found = [...root.querySelectorAll("audio, video")];
        for (const host of root.querySelectorAll("*")) {
          if (host.shadowRoot) found.push(...host.shadowRoot.querySelectorAll("audio, video"));
        }
        const media = found.find((element) => element.currentSrc || element.src);
        return media ? media.currentTime : null;""", audio_id)
