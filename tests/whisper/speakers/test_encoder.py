"""The speaker encoder built here gives Resemblyzer's own embeddings (float32), from the weights file in its wheel;
bfloat16 products keep each embedding's direction, and are chosen only where the CPU multiplies bfloat16 natively."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from asr_specdec.native import backend
from asr_specdec.whisper.io.audio import load_audio
from asr_specdec.whisper.speakers.encoder import (
    WINDOW_FRAMES,
    SlowerSpeakerEncoder,
    encoder_precision,
    mel_frames,
    shared_encoder,
    weights_path,
)


@pytest.fixture
def resemblyzer(monkeypatch):
    """Resemblyzer's VoiceEncoder and mel function. Its package imports webrtcvad (which needs pkg_resources, gone
    from current setuptools) and scipy.ndimage.morphology (deprecated), for silence trimming only: stand-ins let it
    import where they are missing."""
    pytest.importorskip("scipy.ndimage")
    try:
        import webrtcvad  # noqa: F401
    except ImportError:
        monkeypatch.setitem(sys.modules, "webrtcvad", types.ModuleType("webrtcvad"))
    try:
        import scipy.ndimage.morphology  # noqa: F401
    except ImportError:
        import scipy.ndimage

        morphology = types.ModuleType("scipy.ndimage.morphology")
        morphology.binary_dilation = scipy.ndimage.binary_dilation
        monkeypatch.setitem(sys.modules, "scipy.ndimage.morphology", morphology)
    for name in [name for name in sys.modules if name.startswith("resemblyzer")]:
        monkeypatch.delitem(sys.modules, name)
    from resemblyzer import audio, voice_encoder

    return voice_encoder.VoiceEncoder(device="cpu", verbose=False), audio.wav_to_mel_spectrogram


def test_the_weights_come_from_the_installed_wheel():
    path = weights_path()
    assert path.name == "pretrained.pt" and path.parent.name == "resemblyzer" and path.stat().st_size > 10_000_000


def test_embeddings_equal_resemblyzers(resemblyzer, shared_audio):
    theirs, their_mel = resemblyzer
    samples = load_audio(shared_audio / "librivox-0930.wav")
    assert np.allclose(mel_frames(samples), their_mel(samples), rtol=1e-5, atol=1e-7)
    embedding, partials, slices = theirs.embed_utterance(samples, return_partials=True)
    padded = np.pad(samples, (0, max(0, slices[-1].stop - len(samples))))
    mel = mel_frames(padded)
    windows = np.stack([mel[part.start // 160: part.start // 160 + WINDOW_FRAMES] for part in slices])
    ours = shared_encoder().embed(windows, precision="float32")
    assert len(partials) >= 3 and ours.shape == partials.shape
    np.testing.assert_allclose(ours, partials, atol=2e-5)
    mean = ours.mean(axis=0)
    np.testing.assert_allclose(mean / np.linalg.norm(mean), embedding, atol=2e-5)


def test_the_encoder_is_loaded_once_and_shared():
    assert shared_encoder() is shared_encoder()
    assert not shared_encoder().training


@pytest.mark.skipif(not backend.native_bfloat16(), reason="this CPU has no native bfloat16 (the LSTM has no path)")
def test_bfloat16_embeddings_point_where_float32_ones_do(shared_audio):
    mel = mel_frames(load_audio(shared_audio / "librivox-0930.wav"))
    windows = np.stack([mel[start:start + WINDOW_FRAMES] for start in range(0, len(mel) - WINDOW_FRAMES, 80)])
    exact = shared_encoder().embed(windows, precision="float32")
    reduced = shared_encoder().embed(windows, precision="bfloat16")
    assert reduced.dtype == np.float32 and not np.array_equal(reduced, exact)  # the products were reduced
    assert np.min(np.sum(exact * reduced, axis=1)) > 0.99


@pytest.mark.parametrize("native", [True, False])
def test_auto_precision_is_bfloat16_only_where_the_cpu_multiplies_it_natively(monkeypatch, native):
    monkeypatch.setattr(backend, "native_bfloat16", lambda: native)
    assert encoder_precision("auto") == ("bfloat16" if native else "float32")
    assert encoder_precision("float32") == "float32"


def test_bfloat16_asked_for_without_native_bfloat16_is_float32_announced(monkeypatch):
    monkeypatch.setattr(backend, "native_bfloat16", lambda: False)
    with pytest.warns(SlowerSpeakerEncoder, match="float32"):
        assert encoder_precision("bfloat16") == "float32"
    monkeypatch.setattr(backend, "native_bfloat16", lambda: True)
    assert encoder_precision("bfloat16") == "bfloat16"
