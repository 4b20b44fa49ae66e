"""models.py: one resolver for pack names, CTranslate2 dirs, transformers dirs and hub ids."""

from __future__ import annotations

import json
import shutil

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
    assert (loaded.path / MARKER).read_text().strip() == f"{sha} float16-linears-in-model.bin"
    assert not loaded.model.training and loaded.processor is not None

    monkeypatch.setattr("asr_specdec.weights.ct2.convert_ct2_whisper", lambda *_: pytest.fail("converted twice"))
    assert models.resolve_model_dir(str(tiny_ct2_dir)) == loaded.path


@pytest.fixture(scope="module")
def complete_conversion(tiny_ct2_dir, tmp_path_factory):
    """The folder converted with every weight copied (as the convert command writes it): what a load must equal."""
    from asr_specdec.weights.ct2 import convert_ct2_whisper

    return convert_ct2_whisper(tiny_ct2_dir, tmp_path_factory.mktemp("complete") / "model")


def test_the_cache_holds_no_copy_of_the_float16_linear_weights(tiny_ct2_dir, complete_conversion):
    from safetensors import safe_open

    from asr_specdec.weights.ct2 import LINEARS_FILE

    entry = models.resolve_model_dir(str(tiny_ct2_dir))
    with safe_open(str(entry / "model.safetensors"), "pt") as cached, \
            safe_open(str(complete_conversion / "model.safetensors"), "pt") as complete:
        kept, every = set(cached.keys()), set(complete.keys())
        copied16 = {name for name in every if complete.get_tensor(name).dtype == torch.float16}
    assert {"model.decoder.layers.0.fc1.weight", "model.encoder.layers.1.self_attn.q_proj.weight"} <= copied16
    assert kept == every - copied16
    record = json.loads((entry / LINEARS_FILE).read_text())
    assert set(record["tensors"]) == copied16 and record["model.bin"] == str((tiny_ct2_dir / "model.bin").resolve())
    assert (entry / "model.safetensors").stat().st_size < (complete_conversion / "model.safetensors").stat().st_size


@pytest.mark.parametrize("loader", ["transformers", "lean"])
def test_a_cached_conversion_loads_the_weights_of_a_complete_one(tiny_ct2_dir, complete_conversion, loader):
    from asr_specdec.whisper.runtime.lean_model import load_lean_whisper

    if loader == "transformers":
        ours = models.load_whisper(str(tiny_ct2_dir)).model.state_dict()
        theirs = models.load_whisper(str(complete_conversion)).model.state_dict()
    else:
        ours = load_lean_whisper(models.resolve_model_dir(str(tiny_ct2_dir))).state_dict()
        theirs = load_lean_whisper(complete_conversion).state_dict()
    assert set(ours) == set(theirs)
    for name, tensor in theirs.items():
        assert ours[name].dtype == tensor.dtype and torch.equal(ours[name], tensor), name


def test_a_bfloat16_folder_keeps_its_linear_weights_in_place_too(tmp_path):
    """A bfloat16 checkpoint's linear weights are exact in bfloat16 as float16's are in float16: the complete
    conversion stores them so, and the cache's leaves them in model.bin; both load the same model."""
    from safetensors import safe_open

    from asr_specdec.weights.ct2 import LINEARS_FILE, convert_ct2_whisper

    from ..tiny_ct2 import write_tiny_ct2

    folder = tmp_path / "whisper-bf16"
    folder.mkdir()
    write_tiny_ct2(folder, quantization="bfloat16")
    complete = convert_ct2_whisper(folder, tmp_path / "complete")
    with safe_open(str(complete / "model.safetensors"), "pt") as handle:
        assert handle.get_tensor("model.decoder.layers.0.fc1.weight").dtype == torch.bfloat16
        assert handle.get_tensor("model.decoder.layers.0.fc1.bias").dtype == torch.float32
    entry = models.resolve_model_dir(str(folder))
    record = json.loads((entry / LINEARS_FILE).read_text())["tensors"]
    assert record["model.decoder.layers.0.fc1.weight"][2] == "bfloat16"
    assert len(record) == 2 * 6 + 2 * 10  # two layers a side: 6 linear weights an encoder layer, 10 a decoder one
    ours = models.load_whisper(str(folder)).model.state_dict()
    theirs = models.load_whisper(str(complete)).model.state_dict()
    assert all(torch.equal(ours[name], tensor) for name, tensor in theirs.items())


def test_weights_left_in_model_bin_are_not_read_until_used(tiny_ct2_dir):
    from asr_specdec.weights.ct2 import linears_in_place

    from ..resident import resident_kib_of

    tensors = list(linears_in_place(models.resolve_model_dir(str(tiny_ct2_dir))).values())
    # the mapping that holds them (not every mapping of the file: an earlier test's model may still hold one)
    assert tensors and resident_kib_of(tensors) == 0  # mapped only: a packed model never reads them
    assert all(torch.isfinite(tensor.float()).all() for tensor in tensors)
    assert resident_kib_of(tensors) > 0


def test_a_moved_folder_reads_its_weights_from_where_it_is_now(tiny_ct2_dir, tmp_path):
    from asr_specdec.weights.ct2 import LINEARS_FILE

    first, second = tmp_path / "a" / "whisper-tiny", tmp_path / "b" / "whisper-tiny"
    shutil.copytree(tiny_ct2_dir, first)
    entry = models.resolve_model_dir(str(first))
    reference = models.load_whisper(str(first)).model.state_dict()
    shutil.move(first, second)
    assert models.resolve_model_dir(str(second)) == entry  # the same name and content: the same entry
    assert json.loads((entry / LINEARS_FILE).read_text())["model.bin"] == str((second / "model.bin").resolve())
    moved = models.load_whisper(str(second)).model.state_dict()
    assert all(torch.equal(moved[name], tensor) for name, tensor in reference.items())


def test_an_entry_whose_model_bin_changed_says_so(tiny_ct2_dir, tmp_path):
    folder = tmp_path / "whisper-changed"
    shutil.copytree(tiny_ct2_dir, folder)
    entry = models.resolve_model_dir(str(folder))
    from ..tiny_ct2 import write_tiny_ct2

    write_tiny_ct2(tmp_path / "other", seed=1)
    other = (tmp_path / "other" / "model.bin").read_bytes()
    assert len(other) == (folder / "model.bin").stat().st_size
    with open(folder / "model.bin", "r+b") as handle:  # another checkpoint of the same size, in the same file
        handle.write(other)
    with pytest.raises(ModelError, match="which has changed since: load the CTranslate2 folder itself again"):
        models.load_whisper(str(entry))  # the entry itself, as a transformers directory
    assert models.resolve_model_dir(str(folder)) != entry  # the folder: a new entry for its new content


@pytest.mark.parametrize("damage", ["not json", '{"tensors": {"x": ["encoder/layer_0/ffn/linear_0/weight", 0, 1]}}'])
def test_a_damaged_record_of_where_the_weights_lie_is_made_again(tiny_ct2_dir, complete_conversion, damage):
    from asr_specdec.weights.ct2 import LINEARS_FILE, read_linears_record

    entry = models.resolve_model_dir(str(tiny_ct2_dir))
    (entry / LINEARS_FILE).write_text(damage)
    with pytest.raises(ModelError, match="unreadable asr_specdec-linears.json"):
        models.load_whisper(str(entry))  # the entry itself: one line, no traceback
    assert models.resolve_model_dir(str(tiny_ct2_dir)) == entry
    assert read_linears_record(entry)[0] == (tiny_ct2_dir / "model.bin").resolve()
    loaded = models.load_whisper(str(tiny_ct2_dir)).model.state_dict()
    complete = models.load_whisper(str(complete_conversion)).model.state_dict()
    assert all(torch.equal(loaded[name], tensor) for name, tensor in complete.items())


def test_an_entry_of_the_older_layouts_is_converted_again_in_its_place(tiny_ct2_dir):
    from safetensors import safe_open

    from asr_specdec.weights.cache import MARKER, sha256_file
    from asr_specdec.weights.ct2 import LINEARS_FILE

    entry = models.resolve_model_dir(str(tiny_ct2_dir))
    sha = sha256_file(tiny_ct2_dir / "model.bin")
    for older in (sha, f"{sha} float16-linears"):  # every weight float32; then the float16 linear weights copied
        (entry / MARKER).write_text(older + "\n")
        (entry / "model.safetensors").write_bytes(b"")
        (entry / LINEARS_FILE).unlink()
        assert models.resolve_model_dir(str(tiny_ct2_dir)) == entry
        assert (entry / MARKER).read_text().strip() == f"{sha} float16-linears-in-model.bin"
        with safe_open(str(entry / "model.safetensors"), "pt") as handle:
            assert "model.decoder.layers.0.fc1.weight" not in handle.keys()
            assert handle.get_tensor("model.decoder.layers.0.fc1.bias").dtype == torch.float32
        assert "model.decoder.layers.0.fc1.weight" in json.loads((entry / LINEARS_FILE).read_text())["tensors"]


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
