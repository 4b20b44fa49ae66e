"""Offline text-model packs without converting anything: checksums refused, missing packages named, finished
cache entries reused, model specs resolved, and the GGUF parse-once patch undone."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from asr_specdec.errors import ModelError
from asr_specdec.weights import text_models
from asr_specdec.weights.cache import MARKER
from asr_specdec.weights.text_models import TextPack, ensure_text_pack, load_causal_lm


@pytest.fixture
def fake_pack(tmp_path, monkeypatch):
    """A two-part pack whose 'packages' are folders under tmp_path."""
    parts = []
    for index, chunk in enumerate((b"GGUF first half ", b"second half")):
        folder = tmp_path / f"package{index}"
        folder.mkdir()
        (folder / "part").write_bytes(chunk)
        parts.append((f"package{index}", "part"))
    digest = hashlib.sha256(b"GGUF first half second half").hexdigest()
    pack = TextPack("fake", digest, "fake.gguf", tuple(parts), "pip install fake-packages")
    monkeypatch.setattr(text_models, "TEXT_PACKS", {"fake": pack})
    monkeypatch.setattr(text_models, "package_dir", lambda package: tmp_path / package)
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path / "cache"))
    return pack


def test_parts_are_assembled_checked_and_converted_once(fake_pack, monkeypatch):
    converted = []

    def convert(gguf_dir, gguf_name, destination):
        assert (gguf_dir / gguf_name).read_bytes() == b"GGUF first half second half"
        destination.mkdir()
        (destination / "config.json").write_text("{}")
        converted.append(destination)

    monkeypatch.setattr(text_models, "convert_gguf", convert)
    first = ensure_text_pack("fake")
    assert (first / MARKER).read_text().strip() == fake_pack.sha256 and (first / "config.json").is_file()
    assert ensure_text_pack("fake") == first and len(converted) == 1
    assert [entry.name for entry in first.parent.iterdir()] == [first.name]  # no staging left behind


def test_a_corrupt_pack_is_refused_and_nothing_is_cached(fake_pack, tmp_path, monkeypatch):
    (tmp_path / "package1" / "part").write_bytes(b"tampered")
    monkeypatch.setattr(text_models, "convert_gguf", lambda *args: pytest.fail("converted a corrupt pack"))
    with pytest.raises(ModelError, match="corrupt.*reinstall"):
        ensure_text_pack("fake")
    assert list((tmp_path / "cache" / "text").iterdir()) == []


def test_missing_packages_and_parts_are_named(fake_pack, tmp_path, monkeypatch):
    (tmp_path / "package1" / "part").unlink()
    with pytest.raises(ModelError, match="incomplete"):
        ensure_text_pack("fake")
    monkeypatch.setattr(text_models, "package_dir", lambda package: None)
    with pytest.raises(ModelError, match="not installed.*pip install fake-packages"):
        ensure_text_pack("fake")
    with pytest.raises(ModelError, match="unknown offline text model"):
        ensure_text_pack("gpt-5")


def test_model_specs_that_cannot_be_models(tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ModelError, match="is a GGUF file"):
        load_causal_lm(str(gguf))
    with pytest.raises(ModelError, match="holds no transformers config.json"):
        load_causal_lm(str(tmp_path))
    with pytest.raises(ModelError, match="is a file"):
        load_causal_lm(__file__)
    with pytest.raises(ModelError, match="no such model directory"):
        load_causal_lm(str(tmp_path / "missing"))


def test_a_saved_transformers_directory_loads(tmp_path):
    from ..tiny_text import char_tokenizer, tiny_llama

    tokenizer = char_tokenizer()
    tiny_llama(0, vocab=len(tokenizer)).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded = load_causal_lm(str(tmp_path))
    assert loaded.path == Path(tmp_path) and loaded.tokenizer("ab")["input_ids"] == tokenizer("ab")["input_ids"]
    assert not loaded.model.training


def test_the_parse_once_patch_is_undone():
    gguf = pytest.importorskip("gguf")
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with pytest.raises(RuntimeError), text_models._gguf_parsed_once():
        assert gguf.GGUFReader is not reader
        raise RuntimeError
    assert gguf.GGUFReader is reader and gguf.get_tensor_name_map is name_map
