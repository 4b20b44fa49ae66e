"""conversion_process.py: a CTranslate2 folder converted in a child process writes the directory an in-process
conversion writes, byte for byte, and a bad folder's ModelError comes back as the same one line."""

from __future__ import annotations

import json

import pytest

from asr_specdec.errors import ModelError
from asr_specdec.weights.conversion_process import convert_in_own_process
from asr_specdec.weights.ct2 import LINEARS_FILE, convert_ct2_whisper

from ..tiny_ct2 import write_tiny_ct2

pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def tiny_ct2(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny_ct2_float16")
    write_tiny_ct2(directory, quantization="float16")  # 16-bit linears: the in-place record is written too
    return directory


def files(directory) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.mark.parametrize("in_place", [False, True])
def test_the_child_writes_what_this_process_writes(tiny_ct2, tmp_path, in_place):
    sha256 = "0" * 64 if in_place else None
    convert_in_own_process(tiny_ct2, tmp_path / "child", sha256, own_process=True)
    convert_in_own_process(tiny_ct2, tmp_path / "here", sha256, own_process=False)
    child, here = files(tmp_path / "child"), files(tmp_path / "here")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= set(child)
    assert (LINEARS_FILE in child) == in_place
    assert child == here


def test_a_model_error_in_the_child_is_the_same_one_line(tiny_ct2, tmp_path):
    broken = tmp_path / "ct2"
    broken.mkdir()
    for name in ("model.bin", "config.json"):
        (broken / name).symlink_to(tiny_ct2 / name)
    (broken / "tokenizer.json").write_text(json.dumps({"added_tokens": []}))
    with pytest.raises(ModelError) as here:
        convert_ct2_whisper(broken, tmp_path / "here")
    with pytest.raises(ModelError) as child:
        convert_in_own_process(broken, tmp_path / "child", own_process=True)
    assert "not a Whisper tokenizer" in str(child.value) and str(child.value) == str(here.value)
    assert not (tmp_path / "child").exists()


def test_a_child_that_dies_says_so(tiny_ct2, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "")
    monkeypatch.setattr("sys.executable", "/bin/false")  # exits 1 without a word
    with pytest.raises(RuntimeError, match="failed in its own process"):
        convert_in_own_process(tiny_ct2, tmp_path / "child", own_process=True)


@pytest.mark.parametrize("frozen, transformers_imported, in_child", [
    (False, False, True), (False, True, False), (True, False, False)])
def test_where_it_converts_by_default(tmp_path, monkeypatch, frozen, transformers_imported, in_child):
    """In a child unless transformers is imported already, or the interpreter is a frozen application's."""
    import subprocess
    import sys

    children, here = [], []
    monkeypatch.setattr(subprocess, "run", lambda command, **_: children.append(command) or subprocess.CompletedProcess(
        command, 0, "", ""))
    monkeypatch.setattr("asr_specdec.weights.ct2.convert_ct2_whisper", lambda *arguments: here.append(arguments))
    if frozen:
        monkeypatch.setattr(sys, "frozen", True, raising=False)
    if transformers_imported:
        monkeypatch.setitem(sys.modules, "transformers", sys.modules.get("transformers") or object())
    else:
        monkeypatch.delitem(sys.modules, "transformers", raising=False)
    convert_in_own_process(tmp_path / "ct2", tmp_path / "out")
    assert (len(children), len(here)) == ((1, 0) if in_child else (0, 1))
