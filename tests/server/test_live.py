"""The live-transcription WebSocket on a tiny random Whisper: audio frames in, updates and a final message out,
equal to the library's own stream; bad frames, bad options, no audio, a client that leaves mid-stream and a
missing API key each end cleanly (an error message and a close code, never a traceback) and the server goes on.
One test speaks WebSocket over real loopback to uvicorn (wsproto on a socket); the rest use Starlette's client."""

from __future__ import annotations

import json

import numpy as np
import pytest
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from asr_specdec.server import ServerSettings, create_app

from ..tiny_ct2 import tiny_whisper_on_one_thread
from .running import access_lines, live_messages, serving

pytest.importorskip("ctranslate2")

LIVE = "/v1/audio/transcriptions/live"
END = json.dumps({"type": "end"})


@pytest.fixture(scope="module")
def whisper(tmp_path_factory):
    yield from tiny_whisper_on_one_thread(tmp_path_factory)


@pytest.fixture(scope="module")
def client(whisper):
    with TestClient(create_app(whisper, ServerSettings())) as client:
        yield client


def noise(seconds: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * 16000)) * 0.1).astype(np.float32)


def pcm16(samples: np.ndarray) -> bytes:
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def alone(whisper, samples: np.ndarray) -> str:
    """The committed text of the library's stream fed the same audio, then finished."""
    stream = whisper.stream()
    stream.append(samples)
    return stream.finish().committed


def messages_until_closed(websocket) -> list[dict]:
    messages = []
    while True:
        try:
            messages.append(websocket.receive_json())
        except WebSocketDisconnect as closed:
            messages.append({"closed": closed.code})
            return messages


@pytest.mark.parametrize("encoding", ["pcm16", "float32"])
def test_a_stream_gets_updates_then_the_final_text_of_the_librarys_stream(client, whisper, encoding):
    samples = noise(3.0, 1)
    if encoding == "pcm16":
        samples = np.frombuffer(pcm16(samples), dtype="<i2").astype(np.float32) / 32768
    chunks = [samples[start:start + 8000] for start in range(0, len(samples), 8000)]
    with client.websocket_connect(f"{LIVE}?encoding={encoding}") as websocket:
        for chunk in chunks:
            websocket.send_bytes(pcm16(chunk) if encoding == "pcm16" else chunk.astype("<f4").tobytes())
        websocket.send_text(END)
        messages = messages_until_closed(websocket)
    *updates, done, closed = messages
    assert closed == {"closed": 1000}
    assert all(update["type"] == "transcript.update" and not update["final"] for update in updates)
    assert done["type"] == "transcript.done" and done["final"]
    assert done["committed"] == alone(whisper, samples) and done["tentative"] == ""
    assert done["audio_seconds"] == pytest.approx(3.0)
    assert "stats" in done and done["stats"]["new_tokens"] >= 0


def test_a_stream_without_audio_ends_with_an_empty_text(client):
    with client.websocket_connect(LIVE) as websocket:
        websocket.send_text(END)
        messages = messages_until_closed(websocket)
    assert messages[0]["type"] == "transcript.done" and messages[0]["committed"] == ""
    assert messages[-1] == {"closed": 1000}


BAD = [
    # (what, query, frames, close code, error code)
    ("odd number of PCM bytes", "", [b"\x01\x02\x03"], 1007, "invalid_audio"),
    ("float32 frame not whole samples", "?encoding=float32", [b"\x00" * 6], 1007, "invalid_audio"),
    ("NaN samples", "?encoding=float32", [np.array([np.nan, 0.0], "<f4").tobytes()], 1007, "invalid_audio"),
    ("text that is not a control message", "", ["hello"], 1003, "invalid_value"),
    ("unknown encoding", "?encoding=mp3", [], 1003, "invalid_value"),
    ("bad sample rate", "?sample_rate=fast", [], 1003, "invalid_value"),
    ("compare that is not a boolean", "?compare=maybe", [], 1003, "invalid_value"),
    ("unknown model", "?model=gpt-9", [], 1008, "model_not_found"),
]


@pytest.mark.parametrize("what, query, frames, close, code", BAD, ids=[row[0] for row in BAD])
def test_bad_input_gets_an_error_message_and_a_close_code(client, what, query, frames, close, code):
    with client.websocket_connect(LIVE + query) as websocket:
        for frame in frames:
            websocket.send_bytes(frame) if isinstance(frame, bytes) else websocket.send_text(frame)
        messages = messages_until_closed(websocket)
    error, closed = messages[-2:]
    assert error["type"] == "error" and error["error"]["code"] == code, error
    assert "Traceback" not in error["error"]["message"]
    assert closed == {"closed": close}


def test_a_client_leaving_mid_stream_ends_its_stream_and_the_server_goes_on(client, whisper):
    service = client.app.state.service
    with access_lines() as lines:
        with client.websocket_connect(LIVE) as websocket:
            websocket.send_bytes(pcm16(noise(1.0, 2)))
            first = websocket.receive_json()  # an update: the stream is decoding
        assert first["type"] == "transcript.update"
        with client.websocket_connect(LIVE) as websocket:
            websocket.send_bytes(pcm16(noise(0.5, 3)))
            websocket.send_text(json.dumps({"event": "end"}))  # docs/streaming.md's spelling
            assert messages_until_closed(websocket)[-2]["type"] == "transcript.done"
    records = [json.loads(line) for line in lines if '"path": "/v1/audio/transcriptions/live"' in line]
    assert len(records) == 2 and all(record["error"] is None for record in records)
    assert not service._tickets  # nothing left behind


def test_the_api_key_guards_the_live_endpoint(whisper):
    with TestClient(create_app(whisper, ServerSettings(api_key="sesame"))) as client:
        with pytest.raises(WebSocketDisconnect) as refused:
            with client.websocket_connect(LIVE) as websocket:
                websocket.receive_json()
        assert refused.value.code == 1008
        with client.websocket_connect(f"{LIVE}?api_key=sesame") as websocket:
            websocket.send_text(END)
            assert websocket.receive_json()["type"] == "transcript.done"
        headers = {"Authorization": "Bearer sesame"}
        with client.websocket_connect(LIVE, headers=headers) as websocket:
            websocket.send_text(END)
            assert websocket.receive_json()["type"] == "transcript.done"


def test_over_real_loopback_with_uvicorn(whisper):
    """The deployed path: uvicorn's own WebSocket protocol, a client speaking wsproto on a socket."""
    pytest.importorskip("wsproto")
    samples = noise(1.5, 4)
    with serving(whisper) as served:
        messages, closed = live_messages(served.url, [pcm16(samples), END])
    assert closed == 1000
    quantized = np.frombuffer(pcm16(samples), dtype="<i2").astype(np.float32) / 32768
    assert messages[-1]["type"] == "transcript.done" and messages[-1]["committed"] == alone(whisper, quantized)
