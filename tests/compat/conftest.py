"""The drop-in on real weights: the offline `base` pack, with the project's default drafter, and plainly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def peer_audio(shared_audio):
    return shared_audio / "peer"  # faster-whisper's and openai's own test audio (README there)


@pytest.fixture(scope="session")
def model(pack_cache):
    from asr_specdec import WhisperModel

    return WhisperModel("base")


@pytest.fixture(scope="session")
def plain_model(pack_cache):
    """The same weights decoding without a drafter: what speculative output must equal."""
    from asr_specdec import WhisperModel

    return WhisperModel("base", mode="off")


@pytest.fixture(scope="session")
def reference(tmp_path_factory):
    """faster-whisper 1.2.1 itself and the drop-in, on the same CTranslate2 weights of `base` at float32
    (reference_compare.py); faster-whisper's outputs kept for the session, and in ASR_SPECDEC_TEST_CACHE across
    sessions."""
    pytest.importorskip("faster_whisper")
    from .reference_compare import Reference

    store = os.environ.get("ASR_SPECDEC_TEST_CACHE")  # faster-whisper's outputs kept across sessions there
    return Reference(tmp_path_factory.mktemp("faster-whisper-base"), Path(store) if store else None)
