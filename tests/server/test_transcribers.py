"""Per-request options (`mode`, `num_draft_tokens`, the official client's `extra_body`) on models as users get
them: loaded by name through the lean loader (LeanWhisper, no transformers modeling code), a tiny random model
saved as a local directory and the offline tiny.en pack. The other server tests build transformers' classes."""

from __future__ import annotations

import io

import httpx
import numpy as np
import pytest
import soundfile
import torch

from asr_specdec.whisper import SpeculativeWhisper, load_audio
from asr_specdec.whisper.runtime.lean_model import LeanWhisper

from ..tiny_ct2 import converted_dir
from .running import serving

pytest.importorskip("ctranslate2")
openai = pytest.importorskip("openai")

TRANSCRIBE = "/v1/audio/transcriptions"


def wav(samples: np.ndarray, rate: int = 16000) -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def lean_whisper(tmp_path_factory):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models decode faster on one thread, far faster on a busy machine
    try:
        yield SpeculativeWhisper(str(converted_dir(tmp_path_factory.mktemp("lean"), seed=0)), mode="off")
    finally:
        torch.set_num_threads(threads)


def test_the_lean_model_says_where_it_is(lean_whisper):
    assert isinstance(lean_whisper.model, LeanWhisper)
    assert lean_whisper.model.device == lean_whisper.device == torch.device("cpu")
    assert lean_whisper.model.dtype == torch.float32


def test_siblings_of_a_lean_model(lean_whisper):
    from asr_specdec.server.transcribers import Transcribers

    transcribers = Transcribers(lean_whisper)
    for mode, tokens in (("prompt-lookup", None), (None, 4), ("quantized-self", 3)):
        sibling = transcribers.get(mode, tokens)
        assert sibling is not lean_whisper and sibling.model is lean_whisper.model  # the main model is shared
        assert sibling.pipeline is lean_whisper.pipeline  # and what runs it: a sibling differs in its drafting only
        assert sibling.speculation is not lean_whisper.speculation
        assert sibling.device == lean_whisper.device
        assert sibling.mode == (mode or "off") and sibling.draft_length.tokens == (tokens or 8)
    assert transcribers.get("off", None) is lean_whisper


def test_per_request_options_on_a_lean_model(lean_whisper):
    samples = (np.random.default_rng(1).standard_normal(3 * 16000) * 0.1).astype(np.float32)
    clip = wav(samples)
    expected = lean_whisper.transcribe(load_audio(clip), timestamps=True)  # verbose_json asks for segments
    plain = lean_whisper.transcribe(load_audio(clip))
    assert expected.text  # the random model says something, so a mode that broke decoding would show
    with serving(lean_whisper) as served:
        client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0)
        upload = ("clip.wav", clip, "audio/wav")
        for options in ({"mode": "prompt-lookup"}, {"num_draft_tokens": 4}, {"mode": "off"},
                        {"mode": "quantized-self", "num_draft_tokens": 2}):
            answer = client.audio.transcriptions.create(model="whisper-1", file=upload,
                                                        response_format="verbose_json", extra_body=options)
            telemetry = answer.model_extra["asr_specdec"]
            assert answer.text == expected.text, options
            assert telemetry["mode"] == options.get("mode", "off"), options
        # the same fields as a plain multipart form
        response = httpx.post(served.url + TRANSCRIBE, files={"file": upload},
                              data={"model": "whisper-1", "mode": "prompt-lookup", "num_draft_tokens": "4"},
                              timeout=60)
        assert response.status_code == 200 and response.json()["text"] == plain.text


@pytest.mark.slow
def test_per_request_options_on_the_tiny_en_pack(tiny_en_dir, shared_audio, manifest):
    whisper = SpeculativeWhisper("tiny.en", mode="off")
    assert isinstance(whisper.model, LeanWhisper)  # the pack goes through the lean loader, as users get it
    clip = (shared_audio / manifest[0]["audio"]).read_bytes()
    expected = whisper.transcribe(load_audio(clip), timestamps=True).text
    assert expected
    with serving(whisper) as served:
        client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0)
        upload = ("clip.wav", clip, "audio/wav")
        for options in ({"mode": "prompt-lookup"}, {"num_draft_tokens": 4}, {"mode": "quantized-self"}):
            answer = client.audio.transcriptions.create(model="whisper-1", file=upload,
                                                        response_format="verbose_json", extra_body=options)
            assert answer.text == expected.strip() and answer.model_extra["asr_specdec"]["mode"] == options.get("mode",
                                                                                                         "off")
