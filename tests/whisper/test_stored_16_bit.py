"""A CTranslate2 float16 checkpoint, converted, keeps its layers' linear weights in float16 (half the disk and the
mapped memory of a float32 copy). Every path that reads those weights (the packers at every compute type, the
float32 encoder's copy, the PyTorch decoder, the word-timestamp pass, an assistant's own encoder) decodes exactly
what the same checkpoint converted all in float32 decodes, and speculative decoding equals plain."""

from __future__ import annotations

import os
import re
import shutil

import pytest
import torch
from safetensors import safe_open

from asr_specdec.weights import ct2
from asr_specdec.weights.ct2 import convert_ct2_whisper
from asr_specdec.whisper.drafters import AssistantDrafter, EarlyExitDrafter, QuantizedSelfDrafter
from asr_specdec.whisper.runtime.cross_attention import decode_with_cross_attention
from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner, drafting_formats
from asr_specdec.whisper.runtime.encoder import EncoderRunner
from asr_specdec.whisper.runtime.lean_model import load_lean_whisper
from asr_specdec.whisper.runtime.pipeline import Window

from ..tiny_ct2 import write_tiny_ct2
from ..tiny_whisper import features_for
from .test_compute_exact import COMPUTE_TYPES, NATIVE, pipeline_for

LAYER_LINEAR = re.compile(r"model\.(encoder|decoder)\.layers\.\d+\.(self_attn|encoder_attn)?\.?"
                          r"(q_proj|k_proj|v_proj|out_proj|fc1|fc2)\.weight$")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The folder holding half-0 and half-1 (float16 checkpoints of two seeds, converted) and full-0 (seed 0's
    converted all in float32, as before 16-bit storage)."""
    root = tmp_path_factory.mktemp("stored_16_bit")
    for seed in (0, 1):
        write_tiny_ct2(root / f"ct2-{seed}", quantization="float16", seed=seed)
        convert_ct2_whisper(root / f"ct2-{seed}", root / f"half-{seed}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ct2._Weights, "stored_16_bit", lambda self, name: None)
        convert_ct2_whisper(root / "ct2-0", root / "full-0")
    return root


def stored(directory) -> dict[str, torch.Tensor]:
    with safe_open(str(directory / "model.safetensors"), "pt") as handle:
        return {name: handle.get_tensor(name) for name in handle.keys()}


def test_the_conversion_stores_the_layers_linear_weights_in_float16_and_the_rest_in_float32(converted):
    half, full = stored(converted / "half-0"), stored(converted / "full-0")
    assert half.keys() == full.keys()
    linears = [name for name in half if LAYER_LINEAR.match(name)]
    assert len(linears) == 2 * 6 + 2 * 10  # 2 encoder layers of 6, 2 decoder layers of 10
    for name, tensor in half.items():
        assert tensor.dtype == (torch.float16 if name in linears else torch.float32), name
        assert full[name].dtype == torch.float32 and torch.equal(tensor.float(), full[name]), name
    sizes = [(converted / name / "model.safetensors").stat().st_size for name in ("half-0", "full-0")]
    saved = 2 * sum(half[name].numel() for name in linears)  # two bytes a weight (the headers differ by a few)
    assert abs(sizes[1] - sizes[0] - saved) < 256, (sizes, saved)


@pytest.mark.parametrize("quantization", ["float32", "int8"])
def test_a_checkpoint_not_stored_in_float16_is_converted_all_in_float32(tmp_path, quantization):
    write_tiny_ct2(tmp_path / "ct2", quantization=quantization)
    assert {tensor.dtype for tensor in stored(convert_ct2_whisper(tmp_path / "ct2", tmp_path / "hf")).values()} == \
        {torch.float32}


def test_the_lean_loader_keeps_them_float16_on_the_cpu_and_converts_them_elsewhere_asked(converted):
    model = load_lean_whisper(converted / "half-0")
    for name, parameter in model.named_parameters():
        assert parameter.dtype == (torch.float16 if LAYER_LINEAR.match(name) else torch.float32), name
    assert model.dtype == torch.float32
    bfloat16 = load_lean_whisper(converted / "half-0", dtype=torch.bfloat16)
    assert {parameter.dtype for parameter in bfloat16.parameters()} == {torch.bfloat16}


def test_a_float16_transformers_directory_keeps_only_its_layers_linear_weights_16_bit(converted, tmp_path):
    import shutil

    from safetensors.torch import save_file

    for name in ("config.json", "generation_config.json"):
        shutil.copyfile(converted / "full-0" / name, tmp_path / name)
    save_file({name: tensor.half() for name, tensor in stored(converted / "full-0").items()},
              str(tmp_path / "model.safetensors"), {"format": "pt"})
    model = load_lean_whisper(tmp_path)
    for name, parameter in model.named_parameters():
        assert parameter.dtype == (torch.float16 if LAYER_LINEAR.match(name) else torch.float32), name
    assert model.dtype == torch.float32


def decode(pipeline, seed: int):
    return pipeline.decode([Window(features_for(pipeline.model, seed), timestamps=False)])[0]


@pytest.mark.parametrize("compute", COMPUTE_TYPES)
def test_every_compute_type_and_drafter_decodes_what_the_float32_copy_decodes(converted, compute):
    half, full = (load_lean_whisper(converted / name) for name in ("half-0", "full-0"))
    other = load_lean_whisper(converted / "half-1")  # its own encoder (another seed's), in float16 too
    expected = {seed: decode(pipeline_for(full, compute), seed).tokens for seed in range(3)}
    assert any(len(tokens) > 5 for tokens in expected.values())
    assert {seed: decode(pipeline_for(half, compute), seed).tokens for seed in range(3)} == expected
    drafters = {
        "quantized-self": lambda pipeline: QuantizedSelfDrafter(pipeline.model),
        "early-exit": lambda pipeline: EarlyExitDrafter(pipeline.model, 1, weights=pipeline.runner.weights),
        "assistant-self": lambda pipeline: AssistantDrafter(pipeline.model, pipeline.model,
                                                            weights=pipeline.runner.weights),
        "assistant-other": lambda pipeline: AssistantDrafter(other, pipeline.model, **drafting_formats(other)),
    }
    for name, factory in drafters.items():
        speculative = pipeline_for(half, compute, factory)
        drafted = 0
        for seed, tokens in expected.items():
            decoded = decode(speculative, seed)
            assert decoded.tokens == tokens, (compute, name, seed)
            drafted += decoded.stats.drafted_tokens
        assert drafted > 0, (compute, name)


def test_the_float32_encoder_runs_a_float32_copy_that_equals_the_float32_conversion(converted):
    half, full = (load_lean_whisper(converted / name) for name in ("half-0", "full-0"))
    features = features_for(full, 0)
    runners = [EncoderRunner(model.model.encoder, "float32") for model in (half, full)]
    assert runners[0].backend.encoder is not half.model.encoder  # (the model's own holds float16 weights)
    assert runners[1].backend.encoder is full.model.encoder
    with torch.inference_mode():
        assert torch.equal(runners[0](features), runners[1](features))
        # the model's own forward too, widening as it reads (what a user calling the module gets)
        assert torch.equal(half.model.encoder(features).last_hidden_state,
                           full.model.encoder(features).last_hidden_state)


@pytest.mark.parametrize("native", [False, True] if NATIVE else [False])
def test_the_decoder_and_the_word_timestamp_pass_equal_the_float32_conversions(converted, native):
    half, full = (load_lean_whisper(converted / name) for name in ("half-0", "full-0"))
    with torch.inference_mode():
        encoded = full.model.encoder(features_for(full, 0)).last_hidden_state
        ids, outputs = torch.tensor([[257, 258, 4, 9, 30, 2]]), []
        for model in (half, full):
            runner = WhisperDecoderRunner(model, native=native)
            cache = runner.new_cache(encoded)
            logits = runner.forward(cache, ids, 0)
            aligned = decode_with_cross_attention(runner, cache.cross_keys, cache.cross_values, ids[0].tolist(),
                                                  [(1, 0), (1, 3)])
            outputs.append((logits, *aligned))
    for mine, theirs in zip(*outputs):
        assert torch.equal(mine, theirs)


def test_a_weights_key_names_the_folder_and_dtype_then_the_files_version(converted, tmp_path):
    """The packs' key: "WHICH-VERSION", the same for the same folder, dtype and file, a new version (and the same
    WHICH) once the file changed, another WHICH for another dtype or folder (PackStore.save removes the packs of
    a WHICH's earlier versions)."""
    copy = tmp_path / "half-0"
    shutil.copytree(converted / "half-0", copy)
    keys = [load_lean_whisper(copy).weights_key, load_lean_whisper(copy).weights_key]
    assert keys[0] == keys[1] and re.fullmatch(r"[0-9a-f]{12}-[0-9a-f]{12}", keys[0])
    safetensors = copy / "model.safetensors"
    stat = safetensors.stat()
    os.utime(safetensors, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # converted again
    changed = load_lean_whisper(copy).weights_key
    assert changed.split("-")[0] == keys[0].split("-")[0] and changed != keys[0]
    assert load_lean_whisper(copy, dtype=torch.bfloat16).weights_key.split("-")[0] != keys[0].split("-")[0]
    assert load_lean_whisper(converted / "half-0").weights_key.split("-")[0] != keys[0].split("-")[0]
