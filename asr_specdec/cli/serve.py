"""`python -m asr_specdec.serve`: an OpenAI-compatible transcription server (POST /v1/audio/transcriptions).

The models load once, before the server starts listening (a bad model is one line and exit code 2). Concurrent
requests are decoded together as rows of shared batches; each answer is exactly what the request alone gets.
SIGTERM or Ctrl-C stops taking requests, gives those in flight --shutdown-timeout seconds, then answers the
rest with 503 (a second Ctrl-C quits at once).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .commands import error_line, run_command
from .recipe_arguments import add_recipe_arguments, check_recipe_arguments
from .transcriber_arguments import DEFAULTS_HELP, add_model_arguments

API_KEY_ENVIRONMENT = "ASR_SPECDEC_API_KEY"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m asr_specdec.serve", description=__doc__.splitlines()[0],
                                     epilog=DEFAULTS_HELP)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    models = parser.add_argument_group("model (as in python -m asr_specdec.transcribe)")
    # the names and meanings of transcribe's options, so that transcriber_arguments.build_transcriber builds the model
    add_model_arguments(models, serving=True)
    # server-wide defaults; requests set temperature, words, prompt, speakers
    add_recipe_arguments(parser, subtitles=False, speakers=False)
    serving = parser.add_argument_group("serving")
    serving.add_argument("--max-batch-size", type=int, default=8,
                         help="windows decoded together as rows of one batch (default 8; 1: no batching)")
    serving.add_argument("--batch-window-ms", type=float, default=5.0,
                         help="how long a window waits for others to join its batch (default 5)")
    serving.add_argument("--max-queue", type=int, default=32,
                         help="requests inside the server at once; more get 503 with Retry-After (default 32)")
    serving.add_argument("--max-concurrent", type=int, default=None,
                         help="requests transcribed at once, the rest wait in the queue (default: all; 1 serves "
                              "one request at a time)")
    serving.add_argument("--max-upload-mb", type=float, default=25.0, help="largest upload accepted; more get 413 "
                                                                            "(default 25)")
    serving.add_argument("--max-audio-seconds", type=float, default=3600.0,
                         help="longest audio transcribed; longer gets 413 (default 3600)")
    serving.add_argument("--request-timeout", type=float, default=600.0,
                         help="seconds a request may take; then 504 (default 600)")
    serving.add_argument("--api-key", default=None,
                         help=f"require 'Authorization: Bearer KEY' on /v1 (or set {API_KEY_ENVIRONMENT})")
    serving.add_argument("--served-model-name", action="append", default=None, metavar="NAME",
                         help="a model id clients may send (repeatable; default: the main model's name and "
                              "whisper-1)")
    serving.add_argument("--shutdown-timeout", type=float, default=30.0,
                         help="seconds in-flight requests get to finish on shutdown (default 30)")
    from ..core.limits import LIMITS

    for name, flag in LIMIT_FLAGS.items():
        serving.add_argument(flag, type=int, default=getattr(LIMITS, name), dest=f"limit_{name}", metavar="N",
                             help=f"the most {flag.removeprefix('--max-').replace('-', ' ')} a request may ask for "
                                  "(default and most: %(default)s)")
    serving.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info",
                         help="access and server log level (default info)")
    # what transcriber_arguments.build_transcriber reads and a server decides per request
    parser.set_defaults(do_sample=False, task="transcribe", format="json", timestamps=None,
                        stats=False)
    return parser


# the limits of core/limits.py a deployment may tighten, and their flags
LIMIT_FLAGS = {"beam_size": "--max-beam-size", "best_of": "--max-best-of", "num_draft_tokens": "--max-draft-tokens",
               "diarize": "--max-speakers"}


def settings_from(args):
    from ..core.limits import OptionLimits
    from ..server import ServerSettings

    limits = OptionLimits(**{name: getattr(args, f"limit_{name}") for name in LIMIT_FLAGS}, where="on this server")
    return ServerSettings(
        limits=limits,
        max_batch_size=args.max_batch_size, batch_wait_ms=args.batch_window_ms, max_queue=args.max_queue,
        max_concurrent=args.max_concurrent, max_upload_mb=args.max_upload_mb,
        max_audio_seconds=args.max_audio_seconds, request_timeout=args.request_timeout,
        api_key=args.api_key or os.environ.get(API_KEY_ENVIRONMENT) or None,
        model_names=tuple(args.served_model_name or ()), shutdown_timeout=args.shutdown_timeout)


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("asr_specdec.server")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False


def run(args) -> int:
    import uvicorn

    from ..errors import OptionError, SpecdecError
    from ..server import create_app
    from .transcriber_arguments import build_transcriber

    try:
        settings = settings_from(args)
    except OptionError as error:  # a limit named by its flag
        print(f"error: {error.in_words(lambda name: LIMIT_FLAGS.get(name, name))}", file=sys.stderr)
        return 2
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    try:
        check_recipe_arguments(args)
        transcriber, reason = build_transcriber(args)
    except SpecdecError as error:
        print(f"error: {error_line(error, build_parser())}", file=sys.stderr)
        return 2
    names = settings.served_names(transcriber.main_name)
    print(f"models: main {transcriber.main_name}, mode {transcriber.mode} ({reason}); served as "
          f"{', '.join(names)}; batches of up to {settings.max_batch_size}", file=sys.stderr)
    app = create_app(transcriber, settings)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                            timeout_graceful_shutdown=settings.shutdown_timeout + 5)
    server = draining_server(config, lambda: _drain(app, settings.shutdown_timeout))
    server.run()
    return 0 if server.started else 1


def draining_server(config, on_exit):
    """uvicorn's server, telling the application when shutdown begins, so that it drains before uvicorn cancels
    what is still running."""
    import uvicorn

    class DrainingServer(uvicorn.Server):
        def handle_exit(self, sig, frame):
            if not self.should_exit:
                on_exit()
            super().handle_exit(sig, frame)

    return DrainingServer(config)


def _drain(app, timeout: float) -> None:
    service = getattr(app.state, "service", None)
    if service is not None:  # None: stopped before start-up finished
        service.drain(timeout)


def main(argv: list[str] | None = None) -> int:
    return run_command(run, build_parser().parse_args(argv), "interrupted")


if __name__ == "__main__":
    sys.exit(main())
