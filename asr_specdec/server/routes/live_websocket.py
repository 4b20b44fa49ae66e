"""WebSocket /v1/audio/transcriptions/live: live transcription over the library's StreamingTranscriber.

The client connects (query parameters: `language`, `encoding` pcm16 or float32, `sample_rate`, default 16000,
`compare` true to also decode each update plain; with an API key, `Authorization: Bearer` or, where a browser
cannot set headers, `api_key=`), sends mono audio as binary frames (little-endian 16-bit PCM, or 32-bit floats
with `encoding=float32`) and, when it is done, the text frame `{"type": "end"}` (docs/streaming.md's
`{"event": "end"}` too). The server answers with JSON text frames: `{"type": "transcript.update", ...}` whenever
it has decoded the audio received so far (committed text, which never changes, tentative text, times and
telemetry: StreamingUpdate.as_dict), then `{"type": "transcript.done", ...}` (everything committed) and closes.
Bad input gets `{"type": "error", "error": {OpenAI's error body}}` and a close code (1007 for frames that are not
audio, 1003 for other bad input, 1008 for a refused request, 1011 for the server's own trouble); a client that
disconnects mid-stream just ends its stream. Decodes run on the batcher's decoding thread between batches (the
drafters are shared).
"""

from __future__ import annotations

import json

from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from ..errors import ApiError, from_exception
from ..live_session import LiveSession
from .dependencies import get_service

router = APIRouter(prefix="/audio", tags=["audio"])
PATH = "/v1/audio/transcriptions/live"
CLOSE_CODES = {400: 1003, 413: 1009, 503: 1013}  # else 1008 for the client's fault, 1011 for the server's
BAD_FRAME = 1007  # invalid payload: frames that are not whole samples of the announced encoding


@router.websocket("/transcriptions/live")
async def live_transcription(websocket: WebSocket):
    service = get_service(websocket)
    try:
        session = LiveSession.open(service, dict(websocket.query_params))
    except Exception as error:
        await websocket.accept()
        return await _fail(websocket, from_exception(error))
    await websocket.accept()
    try:
        async for update in session.run(_frames(websocket)):
            await websocket.send_text(json.dumps(update, ensure_ascii=False))
    except WebSocketDisconnect:
        return  # the client went away: nothing to answer, its stream is dropped
    except Exception as error:
        return await _fail(websocket, from_exception(error))
    finally:
        session.close()
    await websocket.close(1000)


async def _frames(websocket: WebSocket):
    """The client's frames: bytes (audio) or str (control), until it disconnects."""
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        if message.get("bytes") is not None:
            yield message["bytes"]
        elif message.get("text") is not None:
            yield message["text"]


async def _fail(websocket: WebSocket, error: ApiError) -> None:
    if websocket.application_state != WebSocketState.CONNECTED or \
            websocket.client_state != WebSocketState.CONNECTED:
        return
    try:
        await websocket.send_text(json.dumps({"type": "error", **error.body()}, ensure_ascii=False))
        code = BAD_FRAME if error.code == "invalid_audio" else \
            CLOSE_CODES.get(error.status, 1008 if error.status < 500 else 1011)
        await websocket.close(code, reason=error.message[:120])
    except (WebSocketDisconnect, RuntimeError):
        pass
