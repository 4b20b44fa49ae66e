"""`python -m app.screenshot`: serve the app, transcribe a clip in headless chromium, save the page as PNG."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from .browser import chromium, transcribe_in_page
from .server import free_port, launch, make_settings

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m app.screenshot", description=__doc__.split(":")[1].strip())
    parser.add_argument("--main", default="base", help="main model to show")
    parser.add_argument("--audio", type=Path, default=ROOT.parent / "shared" / "audio" / "librivox-0870.wav")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "screenshot.png")
    parser.add_argument("--height", type=int, default=1500, help="window height in pixels")
    args = parser.parse_args(argv)
    app = launch(make_settings(args.main), port=free_port(), block=False, quiet=True)
    try:
        with tempfile.TemporaryDirectory(prefix="asr-specdec-chromium-") as profile:
            driver = chromium(Path(profile), height=args.height)
            try:
                print(transcribe_in_page(driver, app.local_url, args.audio))
                args.output.parent.mkdir(parents=True, exist_ok=True)
                driver.save_screenshot(str(args.output))
            finally:
                driver.quit()
    finally:
        app.close()
    print(f"saved {args.output}")


if __name__ == "__main__":
    main()
