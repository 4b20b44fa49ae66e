"""A real server for tests: uvicorn on a free loopback port in a background thread, and a gate that holds window
decodes so that tests can keep requests in flight."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from asr_specdec.server import ServerSettings, create_app


@dataclass
class Served:
    url: str
    app: object
    server: uvicorn.Server

    @property
    def service(self):
        return self.app.state.service


@contextmanager
def serving(transcriber, server_class=uvicorn.Server, **settings) -> Iterator[Served]:
    app = create_app(transcriber, ServerSettings(**settings))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=10)
    server = server_class(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.01)
    try:
        yield Served(f"http://127.0.0.1:{port}", app, server)
    finally:
        server.should_exit = True
        thread.join(30)


class DecodeGate:
    """Wraps a transcriber's window decodes: `hold()` makes the next decodes wait until `release()`."""

    def __init__(self, transcriber):
        self.pipeline = transcriber.pipeline
        self.original = self.pipeline.decode
        self.open = threading.Event()
        self.open.set()
        self.waiting = threading.Event()
        self.windows = 0  # windows decoded so far
        self.pipeline.decode = self._decode

    def _decode(self, windows, speculation, generator=None):
        if not self.open.is_set():
            self.waiting.set()
            self.open.wait(60)
        self.windows += len(windows)
        return self.original(windows, speculation, generator)

    def hold(self):
        self.waiting.clear()
        self.open.clear()

    def release(self):
        self.open.set()

    def restore(self):
        self.open.set()
        del self.pipeline.decode


@contextmanager
def gated(transcriber) -> Iterator[DecodeGate]:
    gate = DecodeGate(transcriber)
    try:
        yield gate
    finally:
        gate.restore()


class AccessLines(logging.Handler):
    """Collects the server's access-log lines."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@contextmanager
def access_lines() -> Iterator[list[str]]:
    handler = AccessLines()
    logger = logging.getLogger("asr_specdec.server.access")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def live_messages(url: str, frames: list, path: str = "/v1/audio/transcriptions/live") -> tuple[list[dict], int]:
    """Speak WebSocket to a running server (wsproto on a plain socket): send `frames` (bytes: binary, str: text)
    once the connection is accepted; (the JSON messages received, the server's close code)."""
    import json

    import wsproto
    from wsproto.events import AcceptConnection, BytesMessage, CloseConnection, Request, TextMessage

    host, port = url.removeprefix("http://").split(":")
    connection = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    messages, text, closed = [], "", None
    with socket.create_connection((host, int(port)), timeout=300) as sock:
        sock.sendall(connection.send(Request(host=host, target=path)))
        while closed is None:
            data = sock.recv(65536)
            connection.receive_data(data or None)
            for event in connection.events():
                if isinstance(event, AcceptConnection):
                    for frame in frames:
                        message = BytesMessage(data=frame) if isinstance(frame, bytes) else TextMessage(data=frame)
                        sock.sendall(connection.send(message))
                elif isinstance(event, TextMessage):
                    text += event.data
                    if event.message_finished:
                        messages.append(json.loads(text))
                        text = ""
                elif isinstance(event, CloseConnection):
                    closed = event.code
                    sock.sendall(connection.send(event.response()))
            if not data:
                break
    return messages, closed
