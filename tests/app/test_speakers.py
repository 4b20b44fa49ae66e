"""The page's speaker count box reaches the library: segments coloured and labelled by speaker, the downloads
labelled; a bad count is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import soundfile
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError

from eval.bench.conversations import conversation

from .served import AUDIO, CLIP

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def client(server) -> Client:
    return Client(server, verbose=False)


@pytest.fixture(scope="module")
def talk(tmp_path_factory) -> Path:
    """Two voices taking turns, about 16 s (the test server takes 20 s)."""
    path = tmp_path_factory.mktemp("talk") / "talk.wav"
    soundfile.write(path, conversation(AUDIO, ("librispeech-1088", "librivox-reader"), 0.5, turns=4).samples, 16000)
    return path


@pytest.mark.parametrize("speakers", ["2", "estimate"])
def test_segments_are_coloured_by_speaker_and_downloads_labelled(client, talk, speakers):
    _, _, segments, _, _, downloads = client.predict(audio=handle_file(str(talk)), mode="off", speakers=speakers,
                                                      api_name="/transcribe")
    assert 'class="segment speaker-0"' in segments and 'class="segment speaker-1"' in segments
    assert '<span class="speaker">SPEAKER_01</span>' in segments
    record = json.loads(Path(next(path for path in downloads if path.endswith(".json"))).read_text())
    assert {segment["speaker"] for segment in record["segments"]} == {"SPEAKER_00", "SPEAKER_01"}
    text = Path(next(path for path in downloads if path.endswith(".txt"))).read_text()
    assert text.startswith("[SPEAKER_00] ") and "\n[SPEAKER_01] " in text


def test_off_means_no_speakers(client, talk):
    segments = client.predict(audio=handle_file(str(talk)), mode="off", api_name="/transcribe")[2]
    assert "speaker" not in segments


def test_a_bad_count_is_refused_in_one_line(client):
    with pytest.raises(AppError) as raised:
        client.predict(audio=handle_file(str(CLIP)), speakers="many", api_name="/transcribe")
    message = str(raised.value)
    assert "Speakers" in message and "many" in message and "\n" not in message and "Traceback" not in message
