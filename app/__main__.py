"""Serve the asr-specdec web app: `python -m app --host 127.0.0.1 --port 7860`."""

from __future__ import annotations

import argparse
import sys

from asr_specdec.core.modes import MODES, check_mode_on

from .settings import AppSettings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m app", description=__doc__.split(":")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 for every interface)")
    parser.add_argument("--port", type=int, default=7860, help="port to listen on")
    parser.add_argument("--share", action="store_true", help="also open a public gradio.live link")
    parser.add_argument("--main", default=AppSettings.default_main,
                        help="default main model: an offline pack (tiny.en, base), a CTranslate2 or transformers "
                             "directory, or a model-hub id; the packs are always offered too")
    parser.add_argument("--assistant", default=AppSettings.default_assistant,
                        help="default assistant model for modes assistant/universal")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="default drafter (when not given: quantized-self on CPU, except with an int8 main "
                             "decoder, and off on a GPU)")
    parser.add_argument("--max-upload-mb", type=float, default=AppSettings.max_upload_mb,
                        help="largest upload accepted")
    parser.add_argument("--max-audio-seconds", type=float, default=AppSettings.max_audio_seconds,
                        help="longest audio transcribed, in seconds (the server's name for the same limit)")
    parser.add_argument("--concurrency", type=int, default=1, help="requests decoded at the same time")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, ... or auto: cuda if available")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch

    from asr_specdec.errors import SpecdecError

    from .server import launch, make_settings

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    if args.mode is not None and check_mode_on(args.mode, device):
        print(f"error: {check_mode_on(args.mode, device)}", file=sys.stderr)
        return 2
    settings = make_settings(args.main, args.assistant, default_mode=args.mode, max_upload_mb=args.max_upload_mb,
                             max_audio_seconds=args.max_audio_seconds, device=device)
    drafter = settings.default_mode or "the default for it"
    print(f"loading {settings.default_main} (drafter {drafter}); uploads up to "
          f"{settings.max_upload_mb:g} MB and {settings.max_audio_seconds:g} s", file=sys.stderr)
    try:
        launch(settings, args.host, args.port, args.share, args.concurrency)
    except SpecdecError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
