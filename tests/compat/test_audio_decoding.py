"""The drop-in decodes files as faster-whisper does (PyAV, 16-bit samples): the same samples, bit for bit."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

from asr_specdec.compat import audio as compat_audio
from asr_specdec.compat.utils import decode_audio
from asr_specdec.errors import AudioError
from asr_specdec.whisper.io import audio as audio_io

faster_whisper = pytest.importorskip("faster_whisper")
pytest.importorskip("av")

FILES = ("peer/multilingual.mp3", "peer/jfk.flac", "LJ002-0020.wav", "common_voice_en_651325.mp3")


@pytest.mark.parametrize("name", FILES)
def test_samples_equal_faster_whispers(shared_audio, name):
    path = str(shared_audio / name)
    theirs = faster_whisper.decode_audio(path)
    assert np.array_equal(decode_audio(path), theirs)
    with open(path, "rb") as file:
        assert np.array_equal(decode_audio(file), theirs)
    if name.endswith(".mp3"):  # our own decoder's samples differ here: the test can tell the two apart
        assert not np.array_equal(audio_io.load_audio(path), theirs)


def test_stereo_channels_and_other_rates_equal_faster_whispers(shared_audio):
    path = str(shared_audio / "peer" / "stereo_diarization.wav")
    theirs = faster_whisper.decode_audio(path, split_stereo=True)
    assert all(np.array_equal(mine, their) for mine, their in zip(decode_audio(path, split_stereo=True), theirs))
    path = str(shared_audio / "peer" / "jfk.flac")
    assert np.array_equal(decode_audio(path, sampling_rate=8000), faster_whisper.decode_audio(path, sampling_rate=8000))


def test_bad_input_is_one_line(tmp_path):
    for source, says in ((str(tmp_path / "missing.wav"), "no such file"), (b"", "empty"),
                         (b"not audio at all" * 64, "not audio")):
        with pytest.raises(AudioError, match=says) as refused:
            decode_audio(source)
        assert "\n" not in str(refused.value)


def test_without_pyav_our_decoder_stands_in_announced_once(shared_audio, monkeypatch):
    monkeypatch.setitem(sys.modules, "av", None)  # import av now raises ImportError
    monkeypatch.setattr(compat_audio, "_announced", {})
    path = str(shared_audio / "peer" / "jfk.flac")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first, second = decode_audio(path), decode_audio(path)
    assert [str(w.message) for w in caught if "PyAV" in str(w.message)] and len(caught) == 1
    assert np.array_equal(first, audio_io.load_audio(path)) and np.array_equal(first, second)
