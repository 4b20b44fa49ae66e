"""The drop-in on real weights: the offline `base` pack, with the project's default drafter, and plainly."""

from __future__ import annotations

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
