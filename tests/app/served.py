"""What the app tests serve and send: the clips, the server's limits, and text comparison."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

AUDIO = Path(__file__).resolve().parents[2].parent / "shared" / "audio"
CLIP = AUDIO / "LJ002-0020.wav"  # 1.5 s, "IN EIGHTEEN THIRTEEN": tiny.en writes "in 1813." (one segment)
OTHER_CLIP = AUDIO / "librivox-0880.wav"  # "he was not an ill disposed young man"; tiny.en mishears "ill disposed"
LONG_CLIP = AUDIO / "libri-1088-134315-0000.wav"  # 16 s: tiny.en gives two segments, the second from 9 s
MAX_UPLOAD_MB, MAX_SECONDS = 1, 20
CHROMIUM = Path("/usr/bin/chromium")


def normalized(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def chromium_with_microphone(profile: Path, clip: Path):
    """For a fixture (`yield from`): headless chromium whose fake microphone plays `clip`, quit afterwards; the test
    is skipped where chromium is not installed."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver)")
    from app.browser import chromium, fake_microphone

    driver = chromium(profile, extra_flags=fake_microphone(clip))
    try:
        yield driver
    finally:
        driver.quit()
