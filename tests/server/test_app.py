"""The server end to end on a tiny random Whisper (real feature extractor, tokenizer and timestamp tokens), over
real HTTP on loopback, with raw requests and with the official `openai` client: every response format, streaming,
prompt, errors in OpenAI's shape, the API key, the bounded queue, time-outs, disconnection, shutdown, and
concurrent requests answered exactly as each alone."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
import warnings

import httpx
import numpy as np
import pytest
import soundfile

from asr_specdec.cli.serve import draining_server
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.io.formats import Segment, to_srt, to_vtt
from asr_specdec.whisper.runtime.pipeline import Window

from ..threads import one_thread  # noqa: F401 (an autouse fixture)
from ..tiny_ct2 import tiny_converted_whisper
from .running import access_lines, gated, serving

pytest.importorskip("ctranslate2")
openai = pytest.importorskip("openai")

TRANSCRIBE = "/v1/audio/transcriptions"


@pytest.fixture(scope="module")
def whisper(tmp_path_factory):
    # a random model accepts no draft: drafting would only cost time (one test asks for it per request)
    return SpeculativeWhisper(tiny_converted_whisper(tmp_path_factory), mode="off")


def noise(seconds: float, seed: int, rate: int = 16000) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * rate)) * 0.1).astype(np.float32)


def wav(samples: np.ndarray, rate: int = 16000) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def decoded(data: bytes) -> np.ndarray:
    from asr_specdec.whisper import load_audio

    return load_audio(data)


@pytest.fixture(scope="module")
def clip() -> bytes:
    return wav(noise(4.0, 1))


@pytest.fixture(scope="module")
def served(whisper):
    with serving(whisper, max_upload_mb=2.0, max_audio_seconds=80.0) as served:
        yield served


def post(url: str, data: bytes | None = None, timeout: float = 60, **fields) -> httpx.Response:
    files = {"file": ("clip.wav", data, "audio/wav")} if data is not None else None
    return httpx.post(url + TRANSCRIBE, data={"model": "whisper-1", **fields}, files=files, timeout=timeout)


def error_of(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert "Traceback" not in body["error"]["message"]
    return body["error"]


def logged(lines: list[str], matches, timeout: float = 10) -> dict:
    """The access-log record that `matches` (written just after the answer is sent, so wait for it a little)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [record for record in map(json.loads, list(lines)) if matches(record)]
        if found:
            return found[-1]
        time.sleep(0.01)
    raise AssertionError(f"no access-log line matched among {lines}")


def test_health_and_models(served, whisper):
    health = httpx.get(served.url + "/health").json()
    assert health["status"] == "ok" and health["mode"] == "off"
    assert health["compute_type"] == whisper.compute_type.name and health["backend"] == whisper.backend
    models = httpx.get(served.url + "/v1/models").json()
    assert models["object"] == "list"
    assert [model["id"] for model in models["data"]] == [whisper.main_name, "whisper-1"]
    assert httpx.get(served.url + "/v1/models/whisper-1").json()["id"] == "whisper-1"
    missing = httpx.get(served.url + "/v1/models/nope")
    assert missing.status_code == 404 and error_of(missing)["code"] == "model_not_found"


def test_every_response_format_is_what_the_library_returns(served, whisper, clip):
    samples = decoded(clip)
    plain = whisper.transcribe(samples)
    timed = whisper.transcribe(samples, timestamps=True)
    answer = post(served.url, clip)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    assert answer.json() == {"text": plain.text.strip(), "usage": {"type": "duration", "seconds": 4.0}}
    assert answer.headers["x-request-id"]
    assert post(served.url, clip, response_format="text").text == plain.text.strip() + "\n"
    verbose = post(served.url, clip, response_format="verbose_json", **{"timestamp_granularities[]": "segment"})
    body = verbose.json()
    assert body["task"] == "transcribe" and body["language"] == "english" and body["duration"] == 4.0
    assert body["text"] == timed.text.strip()  # OpenAI's text has no leading space; its segments keep theirs
    assert [(s["start"], s["end"], s["text"], tuple(s["tokens"])) for s in body["segments"]] == \
        [(s.start, s.end, s.text, s.tokens) for s in timed.segments]
    assert [s["id"] for s in body["segments"]] == list(range(len(timed.segments)))
    telemetry = body["asr_specdec"]
    assert telemetry["tokens"] == timed.tokens and telemetry["mode"] == "off"
    assert telemetry["stats"]["new_tokens"] == len(timed.tokens)
    segments = [Segment(s["start"], s["end"], s["text"]) for s in body["segments"]]
    srt = post(served.url, clip, response_format="srt")
    assert srt.text == to_srt(segments) and srt.headers["content-type"].startswith("text/plain")
    vtt = post(served.url, clip, response_format="vtt")
    assert vtt.text == to_vtt(segments) and vtt.headers["content-type"].startswith("text/vtt")


def test_word_timestamps_are_openais_words_list(served, whisper, clip):
    reference = whisper.transcribe(decoded(clip), timestamps=True, word_timestamps=True)
    words = [word for segment in reference.segments for word in segment.words]
    assert words  # the tiny model says something, so there is something to time
    body = post(served.url, clip, response_format="verbose_json",
                **{"timestamp_granularities[]": ["word", "segment"]}).json()
    assert [(w["word"], w["start"], w["end"]) for w in body["words"]] == \
        [(w.word.strip(), w.start, w.end) for w in words]
    assert [len(s["words"]) for s in body["segments"]] == [len(s.words) for s in reference.segments]
    assert body["text"] == reference.text.strip()
    plain = post(served.url, clip, response_format="verbose_json").json()
    assert "words" not in plain and all("words" not in segment for segment in plain["segments"])


def test_the_prompt_conditions_the_first_window_on_previous_text(served, whisper, clip):
    prompt = "spelled Kaczmarek"
    answer = post(served.url, clip, prompt=prompt).json()
    previous = whisper.processor.tokenizer.encode(" " + prompt, add_special_tokens=False)
    features = whisper.pipeline.features(decoded(clip))
    expected = whisper.decode_windows([Window(features, previous=previous)])[0].tokens
    unprompted = whisper.decode_windows([Window(features)])[0].tokens
    assert expected != unprompted
    assert answer["text"] == whisper.pipeline.text(expected)


def test_repetition_options_as_extra_fields_are_the_librarys(served, whisper, clip):
    samples = decoded(clip)
    repeats = {"repetition_penalty": 1.5, "no_repeat_ngram_size": 2}
    expected = whisper.transcribe(samples, timestamps=True, **repeats)
    assert expected.tokens != whisper.transcribe(samples, timestamps=True).tokens  # they change what it says
    answer = post(served.url, clip, response_format="verbose_json", **{k: str(v) for k, v in repeats.items()})
    assert answer.json()["asr_specdec"]["tokens"] == expected.tokens


def test_official_openai_client(served, whisper, clip):
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0)
    upload = ("clip.wav", clip, "audio/wav")
    samples = decoded(clip)
    plain, timed = whisper.transcribe(samples), whisper.transcribe(samples, timestamps=True)
    assert client.audio.transcriptions.create(model="whisper-1", file=upload).text == plain.text.strip()
    assert client.audio.transcriptions.create(model="whisper-1", file=upload, language="en").text == plain.text.strip()
    verbose = client.audio.transcriptions.create(model="whisper-1", file=upload, response_format="verbose_json",
                                                 timestamp_granularities=["segment"])
    assert [segment.text for segment in verbose.segments] == [segment.text for segment in timed.segments]
    assert verbose.language == "english" and verbose.duration == 4.0
    for response_format, expected in (("text", plain.text.strip() + "\n"), ("srt", to_srt(timed.segments)),
                                      ("vtt", to_vtt(timed.segments))):
        assert client.audio.transcriptions.create(model="whisper-1", file=upload,
                                                  response_format=response_format) == expected
    # our own options through extra_body: speculative decoding gives the same text (greedy output never depends
    # on the drafter), and the telemetry says it drafted
    drafted = client.audio.transcriptions.create(model="whisper-1", file=upload, response_format="verbose_json",
                                                 extra_body={"mode": "quantized-self", "num_draft_tokens": 4})
    telemetry = drafted.model_extra["asr_specdec"]
    assert drafted.text == timed.text.strip() and telemetry["tokens"] == timed.tokens
    assert telemetry["mode"] == "quantized-self" and telemetry["stats"]["drafted_tokens"] > 0
    # beam search as an extra field, as faster-whisper-based servers take it: the library's beam search result
    beams = client.audio.transcriptions.create(model="whisper-1", file=upload, response_format="verbose_json",
                                               extra_body={"beam_size": 3})
    expected = whisper.transcribe(samples, timestamps=True, beam_size=3)
    assert beams.model_extra["asr_specdec"]["tokens"] == expected.tokens
    assert beams.model_extra["asr_specdec"]["stats"]["beam_steps"] > 0
    events = list(client.audio.transcriptions.create(model="whisper-1", file=upload, stream=True))
    assert [event.type for event in events] == ["transcript.text.delta"] * len(timed.segments) + \
        ["transcript.text.done"]
    assert events[-1].text == timed.text.strip()
    with pytest.raises(openai.BadRequestError) as refused, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the client marks whisper-1 as deprecated
        client.audio.translations.create(model="whisper-1", file=upload)
    assert refused.value.body["param"] == "task" and "English-only" in refused.value.body["message"]
    with pytest.raises(openai.NotFoundError):
        client.audio.transcriptions.create(model="gpt-4o-transcribe", file=upload)


def test_streaming_sends_each_segment_as_soon_as_it_is_decoded(served, whisper):
    long_clip = wav(noise(70.0, 2, rate=8000), rate=8000)
    reference = whisper.transcribe(decoded(long_clip))
    assert len(reference.segments) > 2
    with gated(whisper) as gate:
        with httpx.stream("POST", served.url + TRANSCRIBE, data={"model": "whisper-1", "stream": "true"},
                          files={"file": ("long.wav", long_clip, "audio/wav")}, timeout=60) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.iter_lines()
            first = json.loads(next(line for line in lines if line.startswith("data: "))[6:])
            # the first window's segments arrive while the next window is still held back
            gate.hold()
            assert gate.waiting.wait(30)
            assert first["type"] == "transcript.text.delta" and first["delta"] == reference.segments[0].text.lstrip()
            gate.release()
            events = [first] + [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    deltas = [event for event in events if event["type"] == "transcript.text.delta"]
    assert [(d["segment"]["start"], d["segment"]["end"], d["segment"]["text"]) for d in deltas] == \
        [(s.start, s.end, s.text) for s in reference.segments]
    assert events[-1]["type"] == "transcript.text.done" and events[-1]["text"] == reference.text.strip()
    assert "".join(d["delta"] for d in deltas) == reference.text.strip()
    assert events[-1]["asr_specdec"]["tokens"] == reference.tokens


BAD_INPUTS = [
    # (what, form fields, upload, status, param, code)
    ("not audio", {}, b"this is plain text, not audio", 400, "file", "invalid_audio"),
    ("empty file", {}, b"", 400, "file", "empty_file"),
    ("no file field", {}, None, 400, "file", "missing_field"),
    ("unknown model", {"model": "gpt-9"}, "clip", 404, "model", "model_not_found"),
    ("bad response_format", {"response_format": "xml"}, "clip", 400, "response_format", "invalid_value"),
    ("word timestamps outside verbose_json", {"timestamp_granularities[]": "word"}, "clip", 400,
     "timestamp_granularities", "invalid_value"),
    ("unknown timestamp granularity", {"timestamp_granularities[]": "syllable", "response_format": "verbose_json"},
     "clip", 400, "timestamp_granularities", "invalid_value"),
    ("temperature out of range", {"temperature": "2.5"}, "clip", 400, "temperature", "invalid_value"),
    ("temperature not a number", {"temperature": "hot"}, "clip", 400, "temperature", "invalid_value"),
    ("unknown mode", {"mode": "telepathy"}, "clip", 400, "mode", "invalid_value"),
    ("mode needing an assistant", {"mode": "universal"}, "clip", 400, "mode", "invalid_value"),
    ("draft length out of range", {"num_draft_tokens": "99"}, "clip", 400, "num_draft_tokens", "invalid_value"),
    ("beam size over the limit", {"beam_size": "17"}, "clip", 400, "beam_size", "invalid_value"),
    ("beam size out of range", {"beam_size": "0"}, "clip", 400, "beam_size", "invalid_value"),
    ("length penalty out of range", {"beam_size": "3", "length_penalty": "2"}, "clip", 400, "length_penalty",
     "invalid_value"),
    ("patience without beams", {"patience": "2"}, "clip", 400, "patience", "invalid_value"),
    ("repetition penalty not positive", {"repetition_penalty": "0"}, "clip", 400, "repetition_penalty",
     "invalid_value"),
    ("negative n-gram size", {"no_repeat_ngram_size": "-1"}, "clip", 400, "no_repeat_ngram_size", "invalid_value"),
    ("chunk length over 30 s", {"chunk_length": "31"}, "clip", 400, "chunk_length", "invalid_value"),
    ("hallucination_silence_threshold without word timestamps", {"hallucination_silence_threshold": "2"}, "clip",
     400, "hallucination_silence_threshold", "invalid_value"),
    ("oversized upload", {}, "oversized", 413, "file", "file_too_large"),
    ("audio over the duration limit", {}, "too long", 413, "file", "audio_too_long"),
]


@pytest.mark.parametrize("what, fields, upload, status, param, code", BAD_INPUTS, ids=[row[0] for row in BAD_INPUTS])
def test_bad_input_gets_a_4xx_json_error(served, clip, what, fields, upload, status, param, code):
    upload = {"clip": clip, "oversized": bytes(3 * 1024 * 1024),
              "too long": wav(noise(90.0, 3, rate=4000), rate=4000)}.get(upload, upload)
    with access_lines() as lines:
        answer = post(served.url, upload, **fields)
        assert logged(lines, lambda record: record["status"] == status and record["path"] == TRANSCRIBE)
    assert answer.status_code == status, answer.text
    error = error_of(answer)
    assert (error["param"], error["code"]) == (param, code)
    assert error["type"] == "invalid_request_error"


def test_malformed_requests_and_the_server_keeps_serving(served, clip):
    json_body = httpx.post(served.url + TRANSCRIBE, json={"model": "whisper-1"})
    assert json_body.status_code == 400 and "multipart/form-data" in error_of(json_body)["message"]
    assert httpx.get(served.url + TRANSCRIBE).status_code == 405
    assert error_of(httpx.get(served.url + "/v1/nothing"))["code"] == "not_found"

    form = httpx.Request("POST", served.url + TRANSCRIBE, data={"model": "whisper-1"},
                         files={"file": ("big.wav", bytes(3 * 1024 * 1024))})
    body = form.read()

    def chunks():  # no Content-Length: the limit is enforced while the body streams in
        for begin in range(0, len(body), 100_000):
            yield body[begin:begin + 100_000]

    chunked = httpx.post(served.url + TRANSCRIBE, content=chunks(),
                         headers={"content-type": form.headers["content-type"]})
    assert chunked.status_code == 413 and error_of(chunked)["code"] == "file_too_large"
    assert post(served.url, clip).status_code == 200


def test_api_key(whisper, clip):
    with serving(whisper, api_key="s3cret") as served:
        assert post(served.url, clip).status_code == 401
        wrong = httpx.post(served.url + TRANSCRIBE, headers={"Authorization": "Bearer nope"},
                           data={"model": "whisper-1"}, files={"file": ("clip.wav", clip)})
        assert wrong.status_code == 401 and error_of(wrong)["code"] == "invalid_api_key"
        assert httpx.get(served.url + "/health").status_code == 200  # no key needed to check liveness
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=served.url + "/v1", api_key="nope", max_retries=0).models.list()
        client = openai.OpenAI(base_url=served.url + "/v1", api_key="s3cret", max_retries=0)
        assert client.audio.transcriptions.create(model="whisper-1", file=("clip.wav", clip)).text is not None


def in_background(function, *args, **kwargs) -> tuple[threading.Thread, dict]:
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("value", function(*args, **kwargs)))
    thread.start()
    return thread, outcome


def test_a_full_queue_answers_503_with_retry_after(whisper, clip):
    with serving(whisper, max_queue=1) as served, gated(whisper) as gate:
        gate.hold()
        thread, first = in_background(post, served.url, clip)
        assert gate.waiting.wait(30)
        busy = post(served.url, clip)
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert error_of(busy)["code"] == "server_busy"
        gate.release()
        thread.join(30)
        assert first["value"].status_code == 200
        assert post(served.url, clip).status_code == 200


def test_a_request_past_its_time_out_gets_504_and_the_server_goes_on(whisper, clip):
    with serving(whisper, request_timeout=1.0) as served, gated(whisper) as gate:
        gate.hold()
        started = time.monotonic()
        late = post(served.url, clip)
        assert late.status_code == 504 and error_of(late)["code"] == "timeout"
        assert time.monotonic() - started < 10
        gate.release()
        assert post(served.url, clip).status_code == 200


def raw_request(url: str, data: bytes) -> socket.socket:
    """Send a transcription request on a raw socket (to hang up on it later)."""
    request = httpx.Request("POST", url + TRANSCRIBE, data={"model": "whisper-1"},
                            files={"file": ("clip.wav", data, "audio/wav")})
    host, port = request.url.host, request.url.port
    connection = socket.create_connection((host, port))
    head = f"POST {TRANSCRIBE} HTTP/1.1\r\nHost: {host}:{port}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in request.headers.items() if name.lower() != "host") + "\r\n"
    connection.sendall(head.encode() + request.read())
    return connection


def test_a_disconnected_client_loses_its_queued_work(whisper, clip):
    with serving(whisper) as served, gated(whisper) as gate, access_lines() as lines:
        gate.hold()
        thread, first = in_background(post, served.url, clip)
        assert gate.waiting.wait(30)  # the decoding thread is busy with the first request
        connection = raw_request(served.url, wav(noise(3.0, 7)))
        deadline = time.monotonic() + 30
        while served.service.batcher.waiting < 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        connection.close()
        while served.service.batcher.waiting > 0:  # withdrawn while the decoder is still busy
            assert time.monotonic() < deadline
            time.sleep(0.01)
        gate.release()
        thread.join(30)
        assert first["value"].status_code == 200
        assert gate.windows == 1  # only the first request's window was ever decoded
        assert logged(lines, lambda record: record["status"] == 499)


def test_shutdown_finishes_requests_in_time_and_fails_the_rest_cleanly(whisper, clip):
    def draining(config):
        return draining_server(config, lambda: served.service.drain(timeout=1.0))

    for finish_in_time in (True, False):
        with serving(whisper, server_class=draining, shutdown_timeout=1.0) as served, gated(whisper) as gate:
            gate.hold()
            thread, answer = in_background(post, served.url, clip)
            assert gate.waiting.wait(30)
            served.server.handle_exit(15, None)  # SIGTERM
            if finish_in_time:
                gate.release()
            thread.join(30)
            gate.release()
            response = answer["value"]
            if finish_in_time:
                assert response.status_code == 200 and response.json()["text"] is not None
            else:
                assert response.status_code == 503 and error_of(response)["code"] == "server_shutting_down"


def test_concurrent_requests_are_batched_and_each_equals_it_alone(whisper):
    clips = [wav(noise(2.0 + index, 10 + index)) for index in range(4)]
    alone = [whisper.transcribe(decoded(data), timestamps=True).tokens for data in clips]
    with serving(whisper, batch_wait_ms=300.0) as served:
        threads = [in_background(post, served.url, data, response_format="verbose_json") for data in clips]
        sampled_thread, sampled = in_background(post, served.url, clips[0], response_format="verbose_json",
                                                temperature="0.7")
        for thread, _ in threads:
            thread.join(60)
        sampled_thread.join(60)
    answers = [outcome["value"].json()["asr_specdec"] for _, outcome in threads]
    assert [answer["tokens"] for answer in answers] == alone
    assert max(row for answer in answers for row in answer["batch_rows"]) > 1  # they did share batches
    assert sampled["value"].status_code == 200
    assert set(sampled["value"].json()["asr_specdec"]["batch_rows"]) == {1}  # its own generator: decoded alone
