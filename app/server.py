"""Start the app: build settings and service, queue requests, launch with the upload limit."""

from __future__ import annotations

import socket

import gradio as gr

from asr_specdec.weights.packs import pack_names

from .service import TranscriptionService
from .settings import AppSettings
from .style import CSS, SEEK_SCRIPT
from .ui import build_app


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def make_settings(main: str = AppSettings.default_main, assistant: str = AppSettings.default_assistant,
                  **limits_and_device) -> AppSettings:
    """Settings offering the offline packs plus the given main and assistant models."""
    models = tuple(dict.fromkeys([main, *pack_names(), assistant]))
    return AppSettings(models, main, assistant, **limits_and_device)


def launch(settings: AppSettings, host: str = "127.0.0.1", port: int | None = None, share: bool = False,
           concurrency: int = 1, block: bool = True, quiet: bool = False) -> gr.Blocks:
    """Load the default decoder, then serve; with `block=False` the server runs in a background thread.

    Raises SpecdecError when the default models cannot be loaded."""
    service = TranscriptionService(settings)
    service.load_defaults()
    app = build_app(service)
    # requests wait their turn in the queue: on a CPU one decode at a time is fastest for everyone
    app.queue(default_concurrency_limit=concurrency)
    app.launch(server_name=host, server_port=port, share=share, max_file_size=settings.max_upload_bytes,
               prevent_thread_lock=not block, quiet=quiet, css=CSS, head=SEEK_SCRIPT)
    return app
