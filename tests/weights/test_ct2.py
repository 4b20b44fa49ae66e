"""ct2.py: CTranslate2 model.bin parsing and conversion to transformers, on a tiny random checkpoint written
by CTranslate2 itself, plus greedy-token parity with faster-whisper on the real offline packs."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from asr_specdec.cli.convert import main as convert_main
from asr_specdec.errors import ModelError
from asr_specdec.weights.ct2 import convert_ct2_whisper, read_model_bin

from ..threads import THREADS
from ..tiny_ct2 import ALIGNMENT_HEADS, BEGIN_SUPPRESS, EOT, NO_TIMESTAMPS, START, SUPPRESS, VOCAB, write_tiny_ct2

pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def tiny_ct2(tmp_path_factory):
    """(CTranslate2 dir, the transformers model it was written from), stored as float32: lossless."""
    directory = tmp_path_factory.mktemp("tiny_ct2")
    return directory, write_tiny_ct2(directory, quantization="float32")


@pytest.fixture(scope="module")
def tiny_converted(tiny_ct2, tmp_path_factory):
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    out = convert_ct2_whisper(tiny_ct2[0], tmp_path_factory.mktemp("tiny_hf") / "model")
    return WhisperForConditionalGeneration.from_pretrained(out).eval(), WhisperProcessor.from_pretrained(out)


def test_float32_round_trip_is_exact(tiny_ct2, tiny_converted):
    original, (converted, _) = tiny_ct2[1], tiny_converted
    converted_state = converted.state_dict()
    for name, tensor in original.state_dict().items():
        assert torch.equal(converted_state[name], tensor), name
    features = torch.randn(1, 80, 3000, generator=torch.Generator().manual_seed(0))
    decoder_ids = torch.tensor([[START, NO_TIMESTAMPS, 5, 9]])
    with torch.no_grad():
        expected = original(input_features=features, decoder_input_ids=decoder_ids).logits
        actual = converted(input_features=features, decoder_input_ids=decoder_ids).logits
    torch.testing.assert_close(actual, expected, rtol=0, atol=1e-5)


def test_config_is_inferred_from_shapes(tiny_converted):
    config = tiny_converted[0].config
    assert (config.vocab_size, config.d_model, config.num_mel_bins) == (VOCAB, 64, 80)
    assert (config.encoder_layers, config.decoder_layers) == (2, 2)
    # heads come from the checkpoint's num_heads, not from the usual d_model / 64
    assert (config.encoder_attention_heads, config.decoder_attention_heads) == (4, 4)
    assert (config.max_source_positions, config.max_target_positions) == (1500, 64)
    assert config.tie_word_embeddings and next(tiny_converted[0].parameters()).dtype == torch.float32


def test_generation_config(tiny_converted):
    generation = tiny_converted[0].generation_config
    assert generation.decoder_start_token_id == START
    assert generation.eos_token_id == generation.pad_token_id == generation.bos_token_id == EOT
    assert generation.no_timestamps_token_id == NO_TIMESTAMPS
    assert generation.suppress_tokens == SUPPRESS and generation.begin_suppress_tokens == BEGIN_SUPPRESS
    assert generation.alignment_heads == ALIGNMENT_HEADS
    assert generation.max_length == 64 and generation.forced_decoder_ids is None
    assert generation.is_multilingual is False and not hasattr(generation, "lang_to_id")


def test_timestamp_tokens_follow_notimestamps(tiny_converted):
    tokenizer = tiny_converted[1].tokenizer
    first = NO_TIMESTAMPS + 1
    assert len(tokenizer) == VOCAB
    assert tokenizer.convert_ids_to_tokens([first, first + 1, first + 1500]) == ["<|0.00|>", "<|0.02|>", "<|30.00|>"]
    assert tokenizer.decode([first, 72, first + 50], decode_with_timestamps=True).startswith("<|0.00|>")
    assert tokenizer.decode([first, 72, first + 50], decode_with_timestamps=True).endswith("<|1.00|>")


def test_converted_model_generates(tiny_converted):
    model, processor = tiny_converted
    features = processor(np.zeros(16000, dtype=np.float32), sampling_rate=16000, return_tensors="pt").input_features
    with torch.no_grad():
        tokens = model.generate(features, max_new_tokens=5)
    assert tokens.shape[0] == 1 and tokens.shape[1] >= 1


@pytest.mark.parametrize("quantization, tolerance", [("float16", 1e-3), ("bfloat16", 4e-3), ("int8", 5e-3),
                                                     ("int16", 1e-3)])
def test_reduced_precision_checkpoints_are_upcast(tmp_path, quantization, tolerance):
    original = write_tiny_ct2(tmp_path / "ct2", quantization=quantization)
    from transformers import WhisperForConditionalGeneration

    converted = WhisperForConditionalGeneration.from_pretrained(convert_ct2_whisper(tmp_path / "ct2", tmp_path / "hf"))
    converted_state = converted.state_dict()
    for name, tensor in original.state_dict().items():
        assert converted_state[name].dtype == torch.float32
        error = (converted_state[name] - tensor).abs().max() / tensor.abs().max()
        assert error < tolerance, (name, float(error))


def test_128_mel_checkpoint_gets_a_128_mel_feature_extractor(tmp_path):
    from transformers import WhisperProcessor

    write_tiny_ct2(tmp_path / "ct2", n_mels=128)
    out = convert_ct2_whisper(tmp_path / "ct2", tmp_path / "hf")
    assert WhisperProcessor.from_pretrained(out).feature_extractor.feature_size == 128
    assert json.loads((out / "config.json").read_text())["num_mel_bins"] == 128


def test_conversion_streams_one_tensor_at_a_time(tiny_ct2, tmp_path, monkeypatch):
    """The conversion never holds the float model: each weight is made, written and let go before the next (a
    fused projection's parts each make the whole fused tensor, so at most two are alive at once), and the
    checkpoint's tensors are views of the mapped file, not a copy of it."""
    import weakref

    from asr_specdec.weights import ct2

    checkpoint = read_model_bin(tiny_ct2[0] / "model.bin")
    assert checkpoint.mapping is not None
    assert all(not array.flags.owndata and not array.flags.writeable for array in checkpoint.variables.values())
    original, alive, sizes = ct2._Weights.__call__, {}, []

    def counted(self, name):
        tensor = original(self, name)
        key = object()
        alive[key] = tensor.nbytes
        weakref.finalize(tensor, alive.pop, key, None)
        sizes.append((sum(alive.values()), tensor.nbytes))
        return tensor

    monkeypatch.setattr(ct2._Weights, "__call__", counted)
    out = convert_ct2_whisper(tiny_ct2[0], tmp_path / "model")
    largest = max(size for _, size in sizes)
    total = (out / "model.safetensors").stat().st_size
    held = max(held for held, _ in sizes)
    assert len(sizes) > 50 and held <= 2 * largest and held < total / 2


def test_a_bfloat16_checkpoint_is_mapped_not_widened_whole_when_read(tmp_path):
    """Its variables are views of the file (their raw bits) like every other dtype's, widened one at a time as the
    conversion reads them: parsing no longer copies the whole model into float32 at once."""
    write_tiny_ct2(tmp_path / "ct2", quantization="bfloat16")
    checkpoint = read_model_bin(tmp_path / "ct2" / "model.bin")
    assert checkpoint.bfloat16 and checkpoint.bfloat16 <= set(checkpoint.variables)
    assert all(not array.flags.owndata for array in checkpoint.variables.values())
    name = "decoder/layer_0/ffn/linear_0/weight"
    raw = checkpoint.variables[name]
    assert name in checkpoint.bfloat16 and raw.dtype == np.uint16
    from asr_specdec.weights import ct2

    widened = ct2._Weights(checkpoint, tmp_path / "ct2" / "model.bin")(name)
    assert torch.equal(widened, torch.from_numpy(raw.view(np.int16).copy()).view(torch.bfloat16).float())


def _first_data_offset(data: bytes) -> int:
    """Offset where the first variable's bytes start (everything before it is header)."""
    name_length = int.from_bytes(data[4:6], "little")
    offset = 6 + name_length + 8
    offset += 2 + int.from_bytes(data[offset:offset + 2], "little")
    rank = data[offset]
    return offset + 1 + 4 * rank + 1 + 4


def test_truncated_model_bin_raises_model_error(tiny_ct2, tmp_path):
    data = (tiny_ct2[0] / "model.bin").read_bytes()
    cuts = set(range(0, _first_data_offset(data) + 8)) | set(random.Random(0).sample(range(len(data)), 200))
    cuts |= {len(data) - 1, len(data) - 10}
    broken = tmp_path / "model.bin"
    for cut in sorted(cuts):
        broken.write_bytes(data[:cut])
        with pytest.raises(ModelError, match="not a valid CTranslate2 model.bin|version"):
            read_model_bin(broken)


def test_corrupt_header_bytes_raise_model_error_or_parse(tiny_ct2, tmp_path):
    data = (tiny_ct2[0] / "model.bin").read_bytes()
    broken = tmp_path / "model.bin"
    for position in range(_first_data_offset(data)):
        for value in (0x00, 0xFF, data[position] ^ 0x01):
            corrupted = bytearray(data)
            corrupted[position] = value
            broken.write_bytes(bytes(corrupted))
            try:
                read_model_bin(broken)
            except ModelError as error:
                assert "\n" not in str(error)


def test_model_bin_format_errors(tiny_ct2, tmp_path):
    data = (tiny_ct2[0] / "model.bin").read_bytes()
    broken = tmp_path / "model.bin"
    broken.write_bytes((5).to_bytes(4, "little") + data[4:])
    with pytest.raises(ModelError, match="binary version 5"):
        read_model_bin(broken)
    broken.write_bytes(data + b"\0\0")
    with pytest.raises(ModelError, match="trailing bytes"):
        read_model_bin(broken)
    with pytest.raises(ModelError, match="cannot read"):
        read_model_bin(tmp_path / "missing.bin")


def test_conversion_of_a_truncated_checkpoint_raises_model_error(tiny_ct2, tmp_path):
    broken = _copy_checkpoint(tiny_ct2[0], tmp_path / "ct2",
                              model_bin=(tiny_ct2[0] / "model.bin").read_bytes()[:-1000])
    with pytest.raises(ModelError, match="truncated"):
        convert_ct2_whisper(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _copy_checkpoint(source, destination, **replacements):
    destination.mkdir()
    for name in ("model.bin", "config.json", "tokenizer.json"):
        (destination / name).write_bytes(replacements.get(name.replace(".", "_"), (source / name).read_bytes()))
    return destination


def test_heads_that_do_not_divide_the_width_raise_model_error(tiny_ct2, tmp_path):
    data = bytearray((tiny_ct2[0] / "model.bin").read_bytes())
    name = b"encoder/num_heads\0"
    value_at = data.index(name) + len(name) + 1 + 1 + 4  # rank 0, dtype id, byte count
    data[value_at: value_at + 2] = (5).to_bytes(2, "little")
    broken = _copy_checkpoint(tiny_ct2[0], tmp_path / "ct2", model_bin=bytes(data))
    with pytest.raises(ModelError, match="do not fit"):
        convert_ct2_whisper(broken, tmp_path / "out")


@pytest.mark.parametrize("tokenizer_json, match", [
    (b"[]", "expected a JSON object"), (b"{not json", "unreadable JSON"),
    (b'{"added_tokens": []}', "not a Whisper tokenizer"), (b'{"added_tokens": [{"id": 1}]}', "malformed"),
])
def test_malformed_tokenizer_raises_model_error(tiny_ct2, tmp_path, tokenizer_json, match):
    broken = _copy_checkpoint(tiny_ct2[0], tmp_path / "ct2", tokenizer_json=tokenizer_json)
    with pytest.raises(ModelError, match=match):
        convert_ct2_whisper(broken, tmp_path / "out")


def test_a_non_whisper_tokenizer_file_raises_model_error(tiny_ct2, tmp_path):
    tokenizer = json.loads((tiny_ct2[0] / "tokenizer.json").read_text())
    tokenizer["model"] = {"type": "NoSuchModel"}
    broken = _copy_checkpoint(tiny_ct2[0], tmp_path / "ct2", tokenizer_json=json.dumps(tokenizer).encode())
    with pytest.raises(ModelError, match="unreadable tokenizer"):
        convert_ct2_whisper(broken, tmp_path / "out")


@pytest.mark.parametrize("missing", ["model.bin", "config.json", "tokenizer.json"])
def test_missing_checkpoint_file(tiny_ct2, tmp_path, missing):
    for name in ("model.bin", "config.json", "tokenizer.json"):
        if name != missing:
            (tmp_path / name).symlink_to(tiny_ct2[0] / name)
    with pytest.raises(ModelError, match=f"no {missing}"):
        convert_ct2_whisper(tmp_path, tmp_path / "out")


def test_refuses_a_non_empty_output_directory(tiny_ct2, tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ModelError, match="not empty"):
        convert_ct2_whisper(tiny_ct2[0], tmp_path)


def test_cli_converts(tiny_ct2, tmp_path, capsys):
    assert convert_main([str(tiny_ct2[0]), str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "out")
    assert (tmp_path / "out" / "generation_config.json").is_file()
    modes = {path.name: path.stat().st_mode & 0o777 for path in (tmp_path / "out").iterdir()}
    assert len(set(modes.values())) == 1 and "model.safetensors" in modes, modes  # the weights as readable as the rest


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    assert convert_main([str(tmp_path / "nope"), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such CTranslate2 model directory" in err and "Traceback" not in err


# Greedy parity with faster-whisper, running the very same CTranslate2 checkpoints.
#
# Both sides use the same fp16 weights upcast to fp32, so when they are given the same log-mel features
# the tokens agree on every clip (checked below with faster-whisper's own features). The end-to-end
# pipelines differ on a few clips because their *features* differ: transformers' WhisperFeatureExtractor
# pads the audio with zeros to 30 s and then takes the log-mel (padding frames hold the log floor, about
# -0.7 to -1.0 after normalisation), while faster-whisper 1.x takes the log-mel of the audio plus 160
# samples and pads the *features* with 0.0 up to 3000 frames. Inside the speech the two extractors agree
# to ~2e-5. Measured (logits of the converted model with transformers' features, at the first token where
# the two pipelines part; chosen minus faster-whisper's token):
#   tiny.en LJ002-0035   end-of-text over "."   gap 0.460    ("8. The Press Yard" vs "... Yard.")
#   tiny.en libri-1088   end-of-text over "."   gap 0.028
#   tiny.en ES2011a      " Kl" over " Cl"       gap 0.467    ("Klafflin" vs "Claphlin")
#   base    libri-1088   "," over "."           gap 1.492
#   base    ES2011a      "m" over "n"           gap 0.248
# These gaps are far above fp32 noise, and with faster-whisper's features the converted model reproduces
# faster-whisper's tokens exactly on all 12 clips for both packs: the difference is the input, not the
# conversion.
FEATURE_PADDING_DIFFERENCES = {
    "tiny.en": {"LJ002-0035.wav", "libri-1088-134315-0000.wav", "ES2011a.Headset-0-40s-46s.wav"},
    "base": {"libri-1088-134315-0000.wav", "ES2011a.Headset-0-40s-46s.wav"},
}

CLIPS = 4  # clips a pack


@pytest.mark.slow
@pytest.mark.parametrize("pack", ["tiny.en", "base"])
def test_greedy_tokens_match_faster_whisper(pack, request, tmp_path, shared_audio, manifest):
    faster_whisper = pytest.importorskip("faster_whisper")
    import librosa
    from faster_whisper.audio import pad_or_trim
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from asr_specdec.weights.packs import assemble_pack

    converted_dir = request.getfixturevalue("tiny_en_dir" if pack == "tiny.en" else "base_dir")
    model = WhisperForConditionalGeneration.from_pretrained(converted_dir).eval()
    processor = WhisperProcessor.from_pretrained(converted_dir)
    reference = faster_whisper.WhisperModel(str(assemble_pack(pack, tmp_path)), device="cpu",
                                            compute_type="float32", cpu_threads=THREADS)
    language = {"language": "en", "task": "transcribe"} if pack == "base" else {}
    end = model.generation_config.eos_token_id

    def greedy(features: np.ndarray) -> list[int]:
        with torch.inference_mode():
            tokens = model.generate(torch.from_numpy(features)[None], num_beams=1, do_sample=False, **language)
        return [token for token in tokens[0].tolist() if token < end]

    # the clips whose features differ, then others up to CLIPS (every clip costs a transformers generate() and a
    # faster-whisper decode; tests/compat/test_faster_whisper_clips.py compares the converted base on all 12)
    clips = [clip for clip in manifest if clip["audio"] in FEATURE_PADDING_DIFFERENCES[pack]]
    clips += [clip for clip in manifest if clip not in clips][: CLIPS - len(clips)]
    mismatches = []
    for clip in clips:
        audio, _ = librosa.load(shared_audio / clip["audio"], sr=16000)
        segments, _ = reference.transcribe(audio, beam_size=1, without_timestamps=True, temperature=0,
                                           condition_on_previous_text=False, vad_filter=False,
                                           no_speech_threshold=None, language=language.get("language"))
        expected = [token for segment in segments for token in segment.tokens if token < end]
        if clip["audio"] in FEATURE_PADDING_DIFFERENCES[pack]:
            # faster-whisper's own features: log-mel of audio + 160 samples, zero-padded to 3000 frames
            features = reference.feature_extractor(audio)
            features = pad_or_trim(features[:, : min(3000, features.shape[-1] - 1)]).astype(np.float32)
        else:
            features = processor(audio, sampling_rate=16000, return_tensors="np").input_features[0]
        if greedy(features) != expected:
            mismatches.append(clip["audio"])
    assert not mismatches
