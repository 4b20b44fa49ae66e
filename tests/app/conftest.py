"""One tiny.en server and one headless chromium (its microphone plays CLIP) for every end-to-end app test: each
takes seconds to start."""

from __future__ import annotations

import pytest

from .served import CLIP, MAX_SECONDS, MAX_UPLOAD_MB, chromium_with_microphone


@pytest.fixture(scope="session")
def server(tiny_en_dir) -> str:  # tiny_en_dir: the pack converted into this session's cache, where "tiny.en" loads from
    from app.server import free_port, launch, make_settings

    # two requests decode at once, so the concurrency test also runs two decoders on one shared model
    app = launch(make_settings("tiny.en", max_upload_mb=MAX_UPLOAD_MB, max_audio_seconds=MAX_SECONDS),
                 port=free_port(), concurrency=2, block=False, quiet=True)
    yield app.local_url
    app.close()


@pytest.fixture(scope="session")
def chromium_session(tmp_path_factory):
    yield from chromium_with_microphone(tmp_path_factory.mktemp("chromium-profile"), CLIP)


@pytest.fixture
def browser(chromium_session):
    """The shared chromium, laid out at desktop width again (a test may have made it a phone)."""
    from app.browser import set_viewport

    set_viewport(chromium_session, 1400, 1100)
    return chromium_session
