"""The server on real weights (Whisper base, int8 self-drafting) and real speech: the official openai client
through every response format, translation, streaming, language and prompt; and concurrent requests with
different clips decoded in shared batches, each returning exactly the tokens it gets alone; word timestamps;
a live WebSocket stream."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import httpx
import numpy as np
import pytest

from asr_specdec.weights.whisper_models import load_whisper
from asr_specdec.whisper import SpeculativeWhisper, load_audio
from asr_specdec.whisper.runtime.pipeline import Window

from .running import live_messages, serving

pytestmark = pytest.mark.slow
openai = pytest.importorskip("openai")

MESSAGE = Path(__file__).resolve().parents[2] / "samples" / "message.wav"
SENTENCE = "Please call me back when you get this message."
CLIPS = ("librivox-0880.wav", "goforward.wav", "forever.wav", "LJ002-0035.wav")


@pytest.fixture(scope="module")
def whisper(base_dir):
    assert base_dir.is_dir()  # the pack, converted once per session
    return SpeculativeWhisper(load_whisper("base"), mode="quantized-self")


@pytest.fixture(scope="module")
def served(whisper):
    # a long batching window, so that requests sent together surely meet in one batch
    with serving(whisper, batch_wait_ms=500.0) as served:
        yield served


def test_official_openai_client_on_real_speech(served, whisper):
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0)
    upload = ("message.wav", MESSAGE.read_bytes(), "audio/wav")
    assert client.audio.transcriptions.create(model="whisper-1", file=upload).text == SENTENCE
    # vtt, and every format against the library, are checked on a tiny model (test_app.py)
    assert client.audio.transcriptions.create(model="base", file=upload, language="en",
                                              response_format="text") == SENTENCE + "\n"
    verbose = client.audio.transcriptions.create(model="whisper-1", file=upload, response_format="verbose_json",
                                                 timestamp_granularities=["segment"])
    assert verbose.text == SENTENCE and verbose.language == "english" and verbose.duration == pytest.approx(2.67)
    (segment,) = verbose.segments
    assert segment.text == " " + SENTENCE and 0 <= segment.start < segment.end <= 2.67
    assert verbose.model_extra["asr_specdec"]["stats"]["accepted_tokens"] > 0  # the drafter did the work
    srt = client.audio.transcriptions.create(model="whisper-1", file=upload, response_format="srt")
    assert srt.startswith("1\n00:00:00,000 --> 00:00:02,") and SENTENCE in srt
    events = list(client.audio.transcriptions.create(model="whisper-1", file=upload, stream=True))
    assert [event.type for event in events] == ["transcript.text.delta", "transcript.text.done"]
    assert events[0].delta == SENTENCE and events[-1].text == SENTENCE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the client marks whisper-1 as deprecated
        translated = client.audio.translations.create(model="whisper-1", file=upload, response_format="verbose_json")
    assert translated.model_extra["task"] == "translate" and translated.language == "english"
    assert "call me back" in translated.text.lower()


def test_the_prompt_is_previous_text_conditioning(served, whisper):
    prompt = "Voicemail transcripts, all in capitals: PLEASE CALL."
    answer = httpx.post(served.url + "/v1/audio/transcriptions", data={"model": "whisper-1", "prompt": prompt},
                        files={"file": ("message.wav", MESSAGE.read_bytes())}, timeout=120).json()
    previous = whisper.processor.tokenizer.encode(" " + prompt, add_special_tokens=False)
    features = whisper.pipeline.features(load_audio(MESSAGE))
    expected = whisper.decode_windows([Window(features, previous=previous)])[0]
    assert answer["text"] == whisper.pipeline.text(expected.tokens)


def transcribe(url: str, data: bytes) -> dict:
    response = httpx.post(url + "/v1/audio/transcriptions", timeout=300,
                          data={"model": "whisper-1", "response_format": "verbose_json"},
                          files={"file": ("clip.wav", data, "audio/wav")})
    assert response.status_code == 200, response.text
    return response.json()


def test_concurrent_requests_return_exactly_what_each_returns_alone(served, shared_audio):
    clips = [(shared_audio / name).read_bytes() for name in CLIPS]
    alone = [transcribe(served.url, data) for data in clips]
    assert all(answer["asr_specdec"]["batch_rows"] == [1] for answer in alone)
    together: list[dict | None] = [None] * len(clips)

    def send(index: int) -> None:
        together[index] = transcribe(served.url, clips[index])

    threads = [threading.Thread(target=send, args=(index,)) for index in range(len(clips))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert [answer["asr_specdec"]["tokens"] for answer in together] == \
        [answer["asr_specdec"]["tokens"] for answer in alone]
    assert [answer["text"] for answer in together] == [answer["text"] for answer in alone]
    assert max(row for answer in together for row in answer["asr_specdec"]["batch_rows"]) > 1
    assert "forward" in together[1]["text"].lower()


def test_word_timestamps_and_a_live_stream_on_real_speech(served, whisper):
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0)
    upload = ("message.wav", MESSAGE.read_bytes(), "audio/wav")
    verbose = client.audio.transcriptions.create(model="whisper-1", file=upload, response_format="verbose_json",
                                                 timestamp_granularities=["word", "segment"])
    reference = whisper.transcribe(MESSAGE.read_bytes(), timestamps=True, word_timestamps=True)
    words = [word for segment in reference.segments for word in segment.words]
    assert [(w.word, w.start, w.end) for w in verbose.words] == [(w.word.strip(), w.start, w.end) for w in words]
    assert " ".join(w.word for w in verbose.words) == SENTENCE
    samples = load_audio(MESSAGE.read_bytes())
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    frames = [pcm[start:start + 8000].tobytes() for start in range(0, len(pcm), 8000)] + ['{"type": "end"}']
    messages, closed = live_messages(served.url, frames)
    assert closed == 1000 and messages[-1]["type"] == "transcript.done"
    assert messages[-1]["committed"] == SENTENCE


def test_hallucination_silence_threshold_as_an_extra_field(served, whisper, shared_audio):
    """The faster-whisper-style extra field reaches the recipe: the words base writes after the speech in
    tests/silences.py are dropped, as the library drops them."""
    import io

    import soundfile

    from ..silences import speech_in_silence

    buffer = io.BytesIO()
    soundfile.write(buffer, speech_in_silence(shared_audio), 16000, format="WAV", subtype="FLOAT")
    audio = buffer.getvalue()
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0)

    def served_text(**extra) -> str:
        return client.audio.transcriptions.create(model="whisper-1", file=("silences.wav", audio, "audio/wav"),
                                                  response_format="verbose_json", extra_body=extra,
                                                  timestamp_granularities=["word", "segment"]).text

    guarded = whisper.transcribe(audio, word_timestamps=True, hallucination_silence_threshold=2.0)
    assert served_text(hallucination_silence_threshold=2.0) == guarded.text.strip()
    assert not guarded.text.endswith(" Okay.") and served_text().endswith(" Okay.")
