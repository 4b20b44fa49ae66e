"""A wrong Ray --address fails fast with one line: a port nobody listens on, and a port that answers but is no
Ray head (Ray itself would retry both for minutes)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

import eval.ray_join as ray_join
from eval.run import main

FAST = ["--main", "tiny.en", "--modes", "off", "--engine", "ray"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def silent_server():
    """A TCP port that accepts connections and never says a word."""
    server = socket.create_server(("127.0.0.1", 0))
    held = []

    def accept():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for connection in held:
        connection.close()


def run_with_address(address: str, shared_audio, tmp_path, capsys) -> tuple[int, str, float]:
    pytest.importorskip("ray")
    started = time.monotonic()
    code = main([*FAST, "--dataset", str(shared_audio / "manifest.jsonl"), "--address", address,
                 "--output", str(tmp_path / "out")])
    return code, capsys.readouterr().err.strip(), time.monotonic() - started


def test_an_unreachable_address_fails_at_once(shared_audio, tmp_path, capsys):
    address = f"127.0.0.1:{free_port()}"
    code, err, seconds = run_with_address(address, shared_audio, tmp_path, capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: cannot reach a Ray head at {address}") and "Traceback" not in err
    assert seconds < 30


def test_an_address_that_is_no_ray_head_fails_within_the_join_limit(silent_server, shared_audio, tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.setattr(ray_join, "JOIN_SECONDS", 3)
    address = f"127.0.0.1:{silent_server}"
    code, err, seconds = run_with_address(address, shared_audio, tmp_path, capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: could not join a Ray cluster at {address} within 3 s")
    assert seconds < 3 + 20  # the join limit plus loading Ray and reading the manifest
