"""The optional API key: with one set, every /v1 request needs `Authorization: Bearer <key>` (401 otherwise).
Checked before the body is read, so that an unauthenticated upload costs nothing. A WebSocket (live
transcription) may give the key as the query parameter `api_key` instead, since browsers cannot set its
headers; a refused one is closed before it opens (HTTP 403)."""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs

from .errors import ApiError


class ApiKeyMiddleware:
    def __init__(self, app, api_key: str | None, prefix: str = "/v1"):
        self.app, self.prefix = app, prefix
        self.expected = api_key.encode() if api_key else None

    async def __call__(self, scope, receive, send):
        if self.expected is None or scope["type"] not in ("http", "websocket") or \
                not scope["path"].startswith(self.prefix):
            return await self.app(scope, receive, send)
        header = dict(scope["headers"]).get(b"authorization", b"")
        if not header and scope["type"] == "websocket":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("api_key")
            header = b"Bearer " + query[0].encode() if query else b""
        scheme, _, given = header.partition(b" ")
        if scheme.lower() != b"bearer" or not given.strip():
            error = ApiError(401, "missing API key: send 'Authorization: Bearer <key>'", code="invalid_api_key")
        elif not hmac.compare_digest(given.strip(), self.expected):
            error = ApiError(401, "incorrect API key", code="invalid_api_key")
        else:
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": error.message})
            return
        await error.response()(scope, receive, send)
