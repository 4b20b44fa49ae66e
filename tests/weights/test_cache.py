"""cache.py: a file's SHA-256, remembered beside the file's identity and read again only when the file changed."""

from __future__ import annotations

import hashlib
import os

import pytest

from asr_specdec.weights import cache


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_file_is_hashed_once_while_it_stays_the_same(tmp_path, own_cache, monkeypatch):
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights" * 1000)
    expected = hashlib.sha256(model.read_bytes()).hexdigest()
    assert cache.known_sha256(model) == expected
    monkeypatch.setattr(cache, "sha256_file", lambda path: pytest.fail(f"{path} hashed again"))
    assert cache.known_sha256(model) == expected
    assert cache.known_sha256(tmp_path / "." / "model.bin") == expected  # the same file by another spelling


def test_a_file_replaced_with_the_same_size_and_time_is_hashed_again(tmp_path, own_cache):
    model = tmp_path / "model.bin"
    model.write_bytes(b"a" * 4096)
    first = cache.known_sha256(model)
    status = model.stat()
    model.write_bytes(b"b" * 4096)  # as `cp -p` of another checkpoint of the same size would leave it
    os.utime(model, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert model.stat().st_size == status.st_size and model.stat().st_mtime_ns == status.st_mtime_ns
    assert cache.known_sha256(model) == hashlib.sha256(b"b" * 4096).hexdigest() != first


def test_an_unwritable_cache_still_gives_the_hash(tmp_path, monkeypatch):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(blocked))
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights")
    assert cache.known_sha256(model) == cache.known_sha256(model) == hashlib.sha256(b"weights").hexdigest()
