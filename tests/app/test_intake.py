"""app/intake.py: only uploaded files are opened, and size and duration limits are checked with a clear message."""

from __future__ import annotations

import numpy as np
import pytest
import soundfile

from app.intake import LimitError, read_audio, uploaded_path
from asr_specdec.errors import AudioError


@pytest.fixture
def uploads(tmp_path):
    folder = tmp_path / "uploads"
    folder.mkdir()
    return folder


def write_tone(path, seconds: float, rate: int = 16000):
    time = np.arange(int(seconds * rate)) / rate
    soundfile.write(path, (0.1 * np.sin(2 * np.pi * 440 * time)).astype(np.float32), rate)
    return path


def test_a_file_inside_the_upload_folder_is_accepted(uploads):
    inside = uploads / "abc" / "clip.wav"
    inside.parent.mkdir()
    assert uploaded_path(str(inside), uploads) == inside.resolve()


@pytest.mark.parametrize("name", ["/etc/passwd", "../outside.wav", "abc/../../outside.wav"])
def test_a_path_outside_the_upload_folder_is_refused(uploads, name):
    value = name if name.startswith("/") else str(uploads / name)
    with pytest.raises(AudioError, match="not an uploaded file"):
        uploaded_path(value, uploads)


def test_a_symlink_out_of_the_upload_folder_is_refused(uploads, tmp_path):
    secret = tmp_path / "secret.wav"
    secret.write_text("x")
    (uploads / "link.wav").symlink_to(secret)
    with pytest.raises(AudioError, match="not an uploaded file"):
        uploaded_path(str(uploads / "link.wav"), uploads)


@pytest.mark.parametrize("value", [None, ""])
def test_no_audio_asks_for_some(value):
    with pytest.raises(AudioError, match="upload a file or record"):
        uploaded_path(value)


def test_size_limit_is_checked_before_decoding(tmp_path):
    path = tmp_path / "big.wav"
    path.write_bytes(b"\0" * 3 * 1024 * 1024)  # not audio either: the size must be what is reported
    with pytest.raises(LimitError, match=r"big\.wav is 3\.0 MB; this server accepts uploads up to 2\.0 MB"):
        read_audio(path, max_bytes=2 * 1024 * 1024, max_audio_seconds=60)


def test_duration_limit(tmp_path):
    path = write_tone(tmp_path / "long.wav", 3.0)
    with pytest.raises(LimitError, match=r"long\.wav lasts 3\.0 s; this server transcribes at most 2\.5 s"):
        read_audio(path, max_bytes=10**7, max_audio_seconds=2.5)


def test_audio_within_limits_comes_back_as_16k_samples(tmp_path):
    samples = read_audio(write_tone(tmp_path / "ok.wav", 1.0, rate=8000), max_bytes=10**7, max_audio_seconds=2)
    assert samples.dtype == np.float32 and len(samples) == 16000


def test_corrupt_audio_error_names_the_file_not_the_server_path(tmp_path):
    path = tmp_path / "notes.wav"
    path.write_text("not audio\n" * 50)
    with pytest.raises(AudioError) as raised:
        read_audio(path, max_bytes=10**7, max_audio_seconds=60)
    assert str(raised.value).startswith("notes.wav: ") and str(tmp_path) not in str(raised.value)
