"""The FastAPI application: middleware (access log, API key, bounded queue, upload size), error handlers, one
router per resource, and a lifespan handler that creates the batcher and the service once and injects them.

The WebSocket endpoint for live transcription (routes/live_websocket.py) is one more router on the same service."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.middleware import Middleware

from .access_log import AccessLogMiddleware
from .auth import ApiKeyMiddleware
from .batcher import WindowBatcher
from .errors import install_error_handlers
from .limits import Admission, AdmissionMiddleware, BodyLimitMiddleware
from .routes import audio, health, models
from .routes import live_websocket as live
from .service import TranscriptionService
from .settings import ServerSettings
from .transcribers import Transcribers

MULTIPART_OVERHEAD_BYTES = 64 * 1024  # form fields and boundaries around the file itself


def create_app(transcriber, settings: ServerSettings | None = None) -> FastAPI:
    """The server for `transcriber`: a loaded SpeculativeWhisper, or a function that returns one (called once, at
    start-up)."""
    settings = settings or ServerSettings()
    admission = Admission(settings.max_queue)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        default = transcriber() if isinstance(transcriber, Callable) else transcriber
        batcher = WindowBatcher(settings.max_batch_size, settings.batch_wait_ms / 1000).start()
        app.state.service = TranscriptionService(Transcribers(default), batcher, settings, admission)
        try:
            yield
        finally:
            app.state.service.close()

    app = FastAPI(title="asr-specdec", summary="OpenAI-compatible speech recognition on speculative Whisper",
                  lifespan=lifespan, middleware=[
                      Middleware(AccessLogMiddleware),
                      Middleware(ApiKeyMiddleware, api_key=settings.api_key),
                      Middleware(AdmissionMiddleware, admission=admission, paths=audio.PATHS,
                                 retry_after_seconds=settings.retry_after_seconds),
                      Middleware(BodyLimitMiddleware, max_bytes=settings.max_upload_bytes + MULTIPART_OVERHEAD_BYTES,
                                 limit_mb=settings.max_upload_mb),
                  ])
    install_error_handlers(app)
    app.include_router(audio.router, prefix="/v1")
    app.include_router(live.router, prefix="/v1")
    app.include_router(models.router, prefix="/v1")
    app.include_router(health.router)
    return app
