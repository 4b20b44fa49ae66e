"""What the app tests serve and send: the clips, the server's limits, and text comparison."""

from __future__ import annotations

import re
from pathlib import Path

AUDIO = Path(__file__).resolve().parents[2].parent / "shared" / "audio"
CLIP = AUDIO / "LJ002-0020.wav"  # 1.5 s, "IN EIGHTEEN THIRTEEN": tiny.en writes "in 1813." (one segment)
OTHER_CLIP = AUDIO / "librivox-0880.wav"  # "he was not an ill disposed young man"; tiny.en mishears "ill disposed"
LONG_CLIP = AUDIO / "libri-1088-134315-0000.wav"  # 16 s: tiny.en gives two segments, the second from 9 s
MAX_UPLOAD_MB, MAX_SECONDS = 1, 20
CHROMIUM = Path("/usr/bin/chromium")


def normalized(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())
