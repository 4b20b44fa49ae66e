"""One live-transcription connection: its query options checked, its audio frames appended to a
StreamingTranscriber of the served model, and its updates decoded on the batcher's decoding thread whenever
enough new audio is waiting (each update covers everything received meanwhile, so a slow decode means larger
updates, never a backlog). The WebSocket route (routes/live_websocket.py) only moves frames."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np

from .access_log import access_log
from .batcher import Ticket
from .errors import ApiError

ENCODINGS = ("pcm16", "float32")
END = "end"


class LiveSession:
    def __init__(self, service, stream, encoding: str, sample_rate: float, ticket: Ticket):
        self.service, self.stream, self.encoding, self.sample_rate = service, stream, encoding, sample_rate
        self.ticket, self.started, self.updates = ticket, time.perf_counter(), 0
        self.decoded_seconds = 0.0  # audio received when the last update decoded
        self.error: str | None = None

    @classmethod
    def open(cls, service, params: dict) -> LiveSession:
        """A session for a connection's query parameters (language, encoding, sample_rate, model), or ApiError."""
        if service.admission.draining:
            raise ApiError(503, "the server is shutting down", code="shutting_down")
        model = params.get("model")
        if model is not None and model not in service.model_names:
            raise ApiError(404, f"model '{model}' does not exist here; this server serves "
                                f"{', '.join(service.model_names)}", param="model", code="model_not_found")
        encoding = params.get("encoding", "pcm16")
        if encoding not in ENCODINGS:
            raise ApiError(400, f"unknown encoding '{encoding}': use pcm16 (little-endian 16-bit) or float32",
                           param="encoding", code="invalid_value")
        try:
            sample_rate = float(params.get("sample_rate", 16000))
        except ValueError:
            sample_rate = -1.0
        if not 1000 <= sample_rate <= 384000:
            raise ApiError(400, f"sample_rate must be a number of Hz between 1000 and 384000, got "
                                f"{params.get('sample_rate')!r}", param="sample_rate", code="invalid_value")
        language = (params.get("language") or "").strip() or None
        language = service.check_language(language)
        compare = params.get("compare", "false").lower()
        if compare not in ("true", "false", "1", "0"):
            raise ApiError(400, f"compare must be true or false, got {compare!r}", param="compare",
                           code="invalid_value")
        stream = service.default.stream(language=language, compare=compare in ("true", "1"))
        ticket = Ticket()
        service.track(ticket)
        return cls(service, stream, encoding, sample_rate, ticket)

    async def run(self, frames):
        """JSON-ready messages: an update whenever enough new audio has been decoded, then the final one after
        the client's end message. Raises what the client did wrong (ApiError) or WebSocketDisconnect."""
        receiver = asyncio.create_task(self._receive(frames))
        try:
            while not receiver.done():
                waiting = self.stream.received_seconds - self.decoded_seconds
                if waiting >= self.stream.min_chunk_seconds:
                    update = await self._decode(self.stream.update)
                    if update is not None:
                        yield self._message("transcript.update", update)
                else:
                    await asyncio.wait({receiver}, timeout=0.05)
            receiver.result()  # the client's error or disconnection, if that is how it ended
            yield self._message("transcript.done", await self._decode(self.stream.finish))
        except ApiError as error:
            self.error = error.code
            raise
        finally:
            receiver.cancel()

    def close(self) -> None:
        self.ticket.cancel(self.ticket.reason or "the client went away")
        self.service.untrack(self.ticket)
        record = {"time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()), "path": "/v1/audio/transcriptions/live",
                  "seconds": round(time.perf_counter() - self.started, 4),
                  "audio_seconds": round(self.stream.received_seconds, 3), "updates": self.updates,
                  "error": self.error}
        access_log.info(json.dumps(record))

    async def _receive(self, frames) -> None:
        """Append the client's audio frames until its end message (returns) or a bad frame (raises)."""
        timeout = self.service.settings.request_timeout
        iterator = frames.__aiter__()
        while True:
            try:
                frame = await asyncio.wait_for(iterator.__anext__(), timeout)
            except TimeoutError:
                raise ApiError(408, f"no message for {timeout:g} s", code="timeout") from None
            if isinstance(frame, str):
                if _control(frame) == END:
                    return
                continue
            self.stream.append(self._samples(frame), sample_rate=self.sample_rate)
            if self.stream.received_seconds > self.service.settings.max_audio_seconds:
                raise ApiError(413, f"the stream passed {self.service.settings.max_audio_seconds:g} s of audio, "
                                    f"this server's limit", code="audio_too_long")

    def _samples(self, frame: bytes) -> np.ndarray:
        width = 2 if self.encoding == "pcm16" else 4
        if len(frame) % width:
            raise ApiError(400, f"an audio frame of {len(frame)} bytes is not whole {width}-byte {self.encoding} "
                                f"samples", param="audio", code="invalid_audio")
        samples = np.frombuffer(frame, dtype="<i2" if width == 2 else "<f4")
        if width == 4 and not np.isfinite(samples).all():
            raise ApiError(400, "float32 audio frame with NaN or infinite samples", param="audio",
                           code="invalid_audio")
        return samples

    async def _decode(self, function):
        received = self.stream.received_seconds
        update = await self.service.exclusive(function, self.ticket)
        self.decoded_seconds = received
        return update

    def _message(self, kind: str, update) -> dict:
        self.updates += 1
        return {"type": kind, **update.as_dict()}


def _control(text: str) -> str:
    try:
        message = json.loads(text)
    except ValueError:
        message = None
    kind = (message.get("type") or message.get("event")) if isinstance(message, dict) else None
    if kind != END:
        raise ApiError(400, f"unknown control message {text[:60]!r}: send audio as binary frames and "
                            f"{{\"type\": \"end\"}} when done", param="message", code="invalid_value")
    return END


