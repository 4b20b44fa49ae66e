"""Structured access logs: one JSON line per request on the `asr_specdec.server.access` logger, with what the
handler added (audio seconds, mode, batch rows, outcome) under `request.state.access`."""

from __future__ import annotations

import json
import logging
import time
import uuid

access_log = logging.getLogger("asr_specdec.server.access")


def note(request, **fields) -> None:
    """Add fields to the request's access-log line."""
    request.scope.setdefault("state", {}).setdefault("access", {}).update(fields)


class AccessLogMiddleware:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        request_id = uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = request_id
        status, sent = 500, 0

        async def observed_send(message):
            nonlocal status, sent
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            elif message["type"] == "http.response.body":
                sent += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            client = scope.get("client")
            record = {
                "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()), "request_id": request_id,
                "client": f"{client[0]}:{client[1]}" if client else None, "method": scope["method"],
                "path": scope["path"], "status": status, "seconds": round(time.perf_counter() - started, 4),
                "bytes_sent": sent, **scope.get("state", {}).get("access", {}),
            }
            access_log.info(json.dumps(record, ensure_ascii=False))
