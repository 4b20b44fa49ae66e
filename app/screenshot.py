"""`python -m app.screenshot`: serve the app, transcribe a clip in headless chromium at desktop and phone width,
save each whole page as PNG."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from .browser import chromium, save_full_page, set_viewport, transcribe_in_page
from .server import free_port, launch, make_settings

ROOT = Path(__file__).resolve().parents[1]
# name: (width, most of the page's height kept); the phone page is long, its first screens are what matter
LAYOUTS = {"desktop": (1400, None), "phone": (400, 1800)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m app.screenshot", description=__doc__.split(":")[1].strip())
    parser.add_argument("--main", default="base", help="main model to show")
    parser.add_argument("--audio", type=Path,
                        default=ROOT.parent / "shared" / "audio" / "libri-1088-134315-0000.wav")
    parser.add_argument("--output-dir", type=Path, default=ROOT / "docs",
                        help="where app-desktop.png and app-phone.png go")
    args = parser.parse_args(argv)
    app = launch(make_settings(args.main), port=free_port(), block=False, quiet=True)
    try:
        with tempfile.TemporaryDirectory(prefix="asr-specdec-chromium-") as profile:
            driver = chromium(Path(profile))
            try:
                for name, (width, max_height) in LAYOUTS.items():
                    set_viewport(driver, width, 900)
                    print(transcribe_in_page(driver, app.local_url, args.audio))
                    output = args.output_dir / f"app-{name}.png"
                    output.parent.mkdir(parents=True, exist_ok=True)
                    save_full_page(driver, output, max_height)
                    print(f"saved {output}")
            finally:
                driver.quit()
    finally:
        app.close()


if __name__ == "__main__":
    main()
