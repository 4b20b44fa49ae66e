"""models.py: one resolver for pack names, CTranslate2 dirs, transformers dirs and hub ids."""

from __future__ import annotations

import pytest
import torch

from asr_specdec.errors import ModelError
from asr_specdec.weights import whisper_models as models


@pytest.fixture(scope="module")
def tiny_ct2_dir(tmp_path_factory):
    pytest.importorskip("ctranslate2")
    from ..tiny_ct2 import write_tiny_ct2

    directory = tmp_path_factory.mktemp("models_ct2")
    write_tiny_ct2(directory)
    return directory


@pytest.fixture
def offline_hub(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_ct2_directory_is_converted_once_and_cached(tiny_ct2_dir, monkeypatch):
    from asr_specdec.weights.cache import MARKER, cache_root, sha256_file

    loaded = models.load_whisper(str(tiny_ct2_dir))
    sha = sha256_file(tiny_ct2_dir / "model.bin")
    assert (loaded.source, loaded.sha256, loaded.name) == ("ct2", sha, str(tiny_ct2_dir))
    assert loaded.path.parent == cache_root() / "ct2" and loaded.path.name.endswith(sha[:12])
    assert (loaded.path / MARKER).read_text().strip() == f"{sha} float16-linears"
    assert not loaded.model.training and loaded.processor is not None

    monkeypatch.setattr("asr_specdec.weights.ct2.convert_ct2_whisper", lambda *_: pytest.fail("converted twice"))
    assert models.resolve_model_dir(str(tiny_ct2_dir)) == loaded.path


def test_an_entry_of_the_older_all_float32_layout_is_converted_again_in_its_place(tiny_ct2_dir):
    from safetensors import safe_open

    from asr_specdec.weights.cache import MARKER, sha256_file

    entry = models.resolve_model_dir(str(tiny_ct2_dir))
    sha = sha256_file(tiny_ct2_dir / "model.bin")
    (entry / MARKER).write_text(sha + "\n")  # as every entry was marked before float16 linears
    (entry / "model.safetensors").write_bytes(b"")
    assert models.resolve_model_dir(str(tiny_ct2_dir)) == entry
    assert (entry / MARKER).read_text().strip() == f"{sha} float16-linears"
    with safe_open(str(entry / "model.safetensors"), "pt") as handle:  # (the checkpoint is float16)
        assert handle.get_tensor("model.decoder.layers.0.fc1.weight").dtype == torch.float16


def test_transformers_directory_is_loaded_as_is(tiny_ct2_dir):
    converted = models.resolve_model_dir(str(tiny_ct2_dir))
    loaded = models.load_whisper(str(converted), dtype=torch.float16)
    assert (loaded.source, loaded.path, loaded.sha256) == ("transformers", converted, None)
    assert next(loaded.model.parameters()).dtype == torch.float16


def test_pack_name_resolves_to_the_cached_pack(tiny_en_dir):
    from asr_specdec.weights.packs import PACKS

    assert models.resolve_model_dir("tiny.en") == tiny_en_dir
    loaded = models.load_whisper("tiny.en")
    assert (loaded.source, loaded.path, loaded.sha256) == ("pack", tiny_en_dir, PACKS["tiny.en"].sha256)
    assert type(loaded.model).__name__ == "WhisperForConditionalGeneration"


@pytest.mark.parametrize("spec", ["./no-such-model", "~/no-such-model-dir", "/no/such/model", "some/where/else"])
def test_missing_path_is_no_such_directory(spec):
    with pytest.raises(ModelError, match="no such model directory"):
        models.load_whisper(spec)


def test_directory_without_a_model(tmp_path):
    with pytest.raises(ModelError, match="neither a CTranslate2 model.bin nor a transformers config.json"):
        models.resolve_model_dir(str(tmp_path))


def test_a_file_is_not_a_model(tmp_path):
    (tmp_path / "model.bin").write_bytes(b"")
    with pytest.raises(ModelError, match="is a file"):
        models.resolve_model_dir(str(tmp_path / "model.bin"))


def test_corrupt_ct2_directory_is_a_model_error(tmp_path):
    (tmp_path / "model.bin").write_bytes(b"\x06\x00\x00")
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelError, match="truncated"):
        models.load_whisper(str(tmp_path))


def test_unknown_name_without_hub_is_one_clear_line(offline_hub):
    with pytest.raises(ModelError) as error:
        models.load_whisper("whisper-nonexistent-xyz")
    message = str(error.value)
    assert message.startswith("could not load 'whisper-nonexistent-xyz': not an offline pack (tiny.en, base), "
                              "not a local directory, and the model hub is unreachable: ")
    assert "\n" not in message
    assert models.resolve_model_dir("openai/whisper-large-v3") == "openai/whisper-large-v3"


def test_hub_is_unreachable_when_offline(offline_hub):
    assert models.hub_reachable() is False


def test_default_models(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert models.default_models() == ("base", None, "no GPU or no model hub: offline pack 'base'")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(models, "hub_reachable", lambda: False)
    assert models.default_models()[0] == "base"
    monkeypatch.setattr(models, "hub_reachable", lambda: True)
    assert models.default_models() == ("openai/whisper-large-v3", "distil-whisper/distil-large-v3",
                                       "GPU and model hub available")


def test_assistant_full_or_decoder_only(tiny_ct2_dir, tmp_path):
    from transformers import WhisperForCausalLM

    converted = models.resolve_model_dir(str(tiny_ct2_dir))
    full = models.load_assistant(str(converted))
    assert type(full.model).__name__ == "WhisperForConditionalGeneration"

    forced = models.load_assistant(str(converted), decoder_only=True)
    assert isinstance(forced.model, WhisperForCausalLM)
    torch.testing.assert_close(forced.model.model.decoder.layers[0].fc1.weight,
                               full.model.model.decoder.layers[0].fc1.weight)

    forced.model.save_pretrained(tmp_path / "decoder_only")  # architectures: WhisperForCausalLM, no processor
    decoder_only = models.load_assistant(str(tmp_path / "decoder_only"))
    assert isinstance(decoder_only.model, WhisperForCausalLM) and decoder_only.processor is None
