"""Limits enforced before a request body is read: a bounded queue (503 + Retry-After when full, or while the
server drains for shutdown) and the upload size (413). Pure ASGI middleware, so that an over-limit upload is
refused without being parsed."""

from __future__ import annotations

import threading

from .errors import ApiError


class Admission:
    """How many transcription requests are inside the server (decoding or waiting), up to `limit`."""

    def __init__(self, limit: int):
        self.limit = limit
        self.inside = 0
        self.draining = False
        self._lock = threading.Lock()

    def enter(self) -> bool:
        with self._lock:
            if self.draining or self.inside >= self.limit:
                return False
            self.inside += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.inside -= 1


class AdmissionMiddleware:
    """POSTs to `paths` take a place in the queue for their whole life, or get a 503."""

    def __init__(self, app, admission: Admission, paths: tuple[str, ...], retry_after_seconds: int):
        self.app, self.admission, self.paths, self.retry_after = app, admission, paths, retry_after_seconds

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") not in self.paths:
            return await self.app(scope, receive, send)
        if not self.admission.enter():
            reason = ("the server is shutting down" if self.admission.draining else
                      f"the server is busy ({self.admission.limit} requests queued); retry shortly")
            error = ApiError(503, reason, code="server_busy", headers={"Retry-After": str(self.retry_after)})
            return await error.response()(scope, receive, send)
        try:
            await self.app(scope, receive, send)
        finally:
            self.admission.leave()


def upload_too_large(limit_mb: float) -> ApiError:
    return ApiError(413, f"the upload is larger than this server's limit of {limit_mb:g} MB", param="file",
                    code="file_too_large")


class _TooLarge(Exception):
    pass


class BodyLimitMiddleware:
    """Requests whose body is over `max_bytes` get a 413: at once from their Content-Length, or as soon as a
    chunked body passes the limit (whatever the application had started to answer is replaced)."""

    def __init__(self, app, max_bytes: int, limit_mb: float):
        self.app, self.max_bytes, self.limit_mb = app, max_bytes, limit_mb

    def _error(self) -> ApiError:
        return upload_too_large(self.limit_mb)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await self._error().response()(scope, receive, send)
        received, over = 0, False

        async def counted_receive():
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    over = True
                    raise _TooLarge
            return message

        async def guarded_send(message):
            if not over:
                await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not over:  # whatever the application made of the cut-off body, the answer is the 413
                raise
        if over:
            await self._error().response()(scope, receive, send)
