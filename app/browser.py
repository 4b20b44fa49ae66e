"""Drive the page in headless Debian chromium: upload a clip, press Transcribe, read the transcript."""

from __future__ import annotations

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
         "--disable-component-update", "--disable-sync", "--no-first-run")


def chromium(profile_dir: Path, width: int = 1400, height: int = 1100) -> webdriver.Chrome:
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile_dir}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def transcribe_in_page(driver: webdriver.Chrome, url: str, audio: Path, timeout: float = 120) -> str:
    """Open the page, upload `audio` in the File tab, press Transcribe; the transcript once it appears."""
    driver.get(url)
    upload(driver, audio, timeout)
    press_transcribe(driver, timeout)
    return transcript(driver, timeout)


def upload(driver: webdriver.Chrome, audio: Path, timeout: float = 60) -> None:
    file_input = WebDriverWait(driver, timeout).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, "#file-audio input[type=file]")))
    file_input.send_keys(str(Path(audio).resolve()))


def press_transcribe(driver: webdriver.Chrome, timeout: float = 60) -> None:
    # the button sends the file only once the upload has finished and the player shows it
    WebDriverWait(driver, timeout).until(expected_conditions.presence_of_element_located(
        (By.CSS_SELECTOR, "#file-audio audio, #file-audio wave")))
    driver.find_element(By.CSS_SELECTOR, "#transcribe-file").click()


def transcript(driver: webdriver.Chrome, timeout: float = 120) -> str:
    box = driver.find_element(By.CSS_SELECTOR, "#file-transcript textarea")
    WebDriverWait(driver, timeout).until(lambda _: box.get_attribute("value").strip())
    return box.get_attribute("value").strip()


def error_messages(driver: webdriver.Chrome, timeout: float = 60) -> str:
    """The text of the error notices the page shows, once there is one."""
    def shown(_):
        return "\n".join(toast.text for toast in driver.find_elements(By.CSS_SELECTOR, "[data-testid='toast-text']")
                         if toast.text.strip())

    return WebDriverWait(driver, timeout).until(shown)
