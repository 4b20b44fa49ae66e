"""Exactness at every compute type, on tiny random models through the window pipeline: speculative tokens equal
plain greedy tokens of the main model at the same compute type, whatever the drafter; batched rows equal the
rows alone; the same for a model laid out as large-v3 with a decoder-only distil-style assistant."""

from __future__ import annotations

import pytest
import torch

from asr_specdec.core.prompt_lookup import PromptLookupDrafter
from asr_specdec.errors import ModelError
from asr_specdec.whisper.drafters import AssistantDrafter, EarlyExitDrafter, QuantizedSelfDrafter
from asr_specdec.whisper.runtime.compute import ComputeType, parse_compute_type
from asr_specdec.whisper.runtime.decoder import drafting_formats, native_decoder_unavailable
from asr_specdec.whisper.runtime.pipeline import Window, WindowPipeline

from ..tiny_whisper import DraftedPipeline, distil_assistant, features_for, large_v3_layout, tiny_whisper

MAIN, OTHER = tiny_whisper(0), tiny_whisper(1)
LARGE = large_v3_layout(2)
DISTIL = distil_assistant(LARGE, 3)
NATIVE = native_decoder_unavailable(MAIN) is None
# reduced-precision decoders run on the native kernels only; the encoder's precision is free everywhere
COMPUTE_TYPES = (["float32", "bfloat16", "int8", "bfloat16:float32", "float32:int8", "int8:bfloat16"] if NATIVE
                 else ["float32", "bfloat16:float32", "int8:float32"])

DRAFTERS = {
    "quantized-self": lambda pipeline: QuantizedSelfDrafter(pipeline.model),
    "early-exit": lambda pipeline: EarlyExitDrafter(pipeline.model, 1, weights=pipeline.runner.weights),
    "assistant-other": lambda pipeline: AssistantDrafter(OTHER, pipeline.model, weights=pipeline.runner.weights),
    "assistant-self": lambda pipeline: AssistantDrafter(pipeline.model, pipeline.model,
                                                        weights=pipeline.runner.weights),
    # as mode=assistant builds it: a drafter's int8 formats, whatever the main model's compute type
    "assistant-drafting": lambda pipeline: AssistantDrafter(OTHER, pipeline.model, **drafting_formats(OTHER)),
    "prompt-lookup": lambda pipeline: PromptLookupDrafter(),
}


def pipeline_for(model, compute: str, drafter=None, draft_tokens: int = 4) -> DraftedPipeline:
    """The pipeline of `model` at `compute`, its decodes drafted by `drafter(pipeline)` (None: plain)."""
    pipeline = WindowPipeline(model, None, compute=parse_compute_type(compute))
    return DraftedPipeline(pipeline, drafter(pipeline) if drafter else None, draft_tokens, max_new_tokens=40)


def decode(pipeline: DraftedPipeline, seeds, timestamps: bool = False) -> list[list[int]]:
    windows = [Window(features_for(pipeline.model, seed), timestamps=timestamps) for seed in seeds]
    return [row.tokens for row in pipeline.decode(windows)]


@pytest.mark.parametrize("compute", COMPUTE_TYPES)
def test_every_drafter_equals_plain_at_every_compute_type(compute):
    plain = pipeline_for(MAIN, compute)
    expected = {seed: decode(plain, [seed])[0] for seed in range(3)}
    assert any(len(tokens) > 5 for tokens in expected.values())
    for name, factory in DRAFTERS.items():
        speculative = pipeline_for(MAIN, compute, factory)
        for seed, tokens in expected.items():
            assert decode(speculative, [seed])[0] == tokens, (compute, name, seed)


@pytest.mark.parametrize("compute", COMPUTE_TYPES)
def test_batched_rows_equal_rows_alone_with_timestamps_too(compute):
    for timestamps in (False, True):
        plain = pipeline_for(MAIN, compute)
        alone = [decode(plain, [seed], timestamps)[0] for seed in range(4)]
        assert decode(plain, range(4), timestamps) == alone
        speculative = pipeline_for(MAIN, compute, DRAFTERS["quantized-self"])
        assert decode(speculative, range(4), timestamps) == alone


@pytest.mark.parametrize("compute", ["int8:float32", "int8"] if NATIVE else ["int8:float32"])
def test_the_int8_encoder_with_float32_activations_keeps_every_drafter_exact(compute, monkeypatch):
    """The int8 encoder with float32 between its products (every build's form since 2026-12-03)."""
    from dataclasses import replace

    import asr_specdec.native as native

    here = native.capabilities()
    monkeypatch.setattr(native, "capabilities", lambda: replace(here, int8_between="float32"))
    products = pipeline_for(MAIN, compute).encoder.backend.products
    assert products is None or products.dtype == torch.float32
    test_every_drafter_equals_plain_at_every_compute_type(compute)
    test_batched_rows_equal_rows_alone_with_timestamps_too(compute)


@pytest.mark.parametrize("compute", ["float32", "bfloat16:float32"] + (["bfloat16", "int8"] if NATIVE else []))
def test_large_v3_layout_with_a_decoder_only_assistant_every_mode(compute):
    plain = pipeline_for(LARGE, compute)
    expected = [decode(plain, [seed])[0] for seed in range(2)]
    modes = {**DRAFTERS, "distil assistant": lambda pipeline: AssistantDrafter(DISTIL, pipeline.model,
                                                                               weights=pipeline.runner.weights),
             "distil assistant, drafting": lambda pipeline: AssistantDrafter(DISTIL, pipeline.model,
                                                                             **drafting_formats(DISTIL))}
    modes.pop("assistant-other")
    modes.pop("assistant-drafting")  # OTHER's 8 mel bins: the distil ones stand in for both
    for name, factory in modes.items():
        speculative = pipeline_for(LARGE, compute, factory)
        assert [decode(speculative, [seed])[0] for seed in range(2)] == expected, (compute, name)
    assert DISTIL.model.decoder.layers[0].encoder_attn.k_proj.in_features == LARGE.config.d_model


def test_compute_types_are_parsed_and_checked():
    assert parse_compute_type("bfloat16:float32") == ComputeType("bfloat16", "float32")
    assert parse_compute_type("int8").name == "int8"
    assert parse_compute_type("auto", "cuda") == ComputeType("float16", "float16")
    for bad, device in (("float16", "cpu"), ("int8", "cuda"), ("int4", "cpu"), ("a:b:c", "cpu")):
        with pytest.raises(ModelError):
            parse_compute_type(bad, device)


def test_the_transcriber_takes_auto_at_its_models_width(monkeypatch, tmp_path_factory):
    from asr_specdec.native import backend as backend_module
    from asr_specdec.whisper import SpeculativeWhisper

    from ..tiny_ct2 import tiny_converted_whisper

    loaded = tiny_converted_whisper(tmp_path_factory)
    width, isa = loaded[0].config.d_model, backend_module.backend().isa
    narrower = SpeculativeWhisper(loaded, mode="off").compute_type
    monkeypatch.setitem(backend_module.AUTO_COMPUTE_BY_WIDTH, isa, {width: ("int8", "int8")})
    assert SpeculativeWhisper(loaded, mode="off").compute_type == (ComputeType("int8", "int8") if NATIVE
                                                                  else narrower)
    monkeypatch.setitem(backend_module.AUTO_COMPUTE_BY_WIDTH, isa, {width + 1: ("int8", "int8")})
    assert SpeculativeWhisper(loaded, mode="off").compute_type == narrower
    assert SpeculativeWhisper(loaded, mode="off", compute_type="float32").compute_type == ComputeType()


@pytest.mark.skipif(not NATIVE, reason="native kernels unavailable")
def test_the_pytorch_path_agrees_with_the_kernels():
    from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner

    features = features_for(MAIN, 0)
    with torch.inference_mode():
        encoded = MAIN.model.encoder(features).last_hidden_state
        ids = torch.tensor([[101, 110, 4, 9, 30, 2]])
        logits = [runner.forward(runner.new_cache(encoded), ids, 0)
                  for runner in (WhisperDecoderRunner(MAIN), WhisperDecoderRunner(MAIN, native=False))]
    torch.testing.assert_close(logits[0], logits[1], atol=1e-4, rtol=1e-4)


@pytest.mark.skipif(not NATIVE, reason="a drafter's int8 formats are the native kernels'")
@pytest.mark.parametrize("compute", ["float32", "int8"])
def test_an_assistant_in_a_drafters_int8_formats_proposes_tokens_and_stays_exact(compute):
    """mode=assistant's drafter: another model, its linear layers int8-vnni (int8 activations, an int4 screen of the
    vocabulary): drafts are proposed, some accepted and some not, and the tokens are plain decoding's."""
    from asr_specdec.native import capabilities

    formats = drafting_formats(OTHER)
    assert formats["weights"] == capabilities().fastest_int8 and formats["cross_dtype"] == torch.int8
    plain = pipeline_for(MAIN, compute)
    speculative = pipeline_for(MAIN, compute, DRAFTERS["assistant-drafting"])
    assert speculative.drafter.runner.weights == formats["weights"]
    drafted = accepted = 0
    for seed in range(32):  # another random model's drafts pass about one time in 150: seeds until a few did
        expected = decode(plain, [seed])[0]
        windows = [Window(features_for(MAIN, seed))]
        row = speculative.decode(windows)[0]
        assert row.tokens == expected, (compute, seed)
        drafted, accepted = drafted + row.stats.drafted_tokens, accepted + row.stats.accepted_tokens
        if seed >= 7 and drafted > accepted > 0:
            break
    assert drafted > accepted > 0


@pytest.mark.skipif(not NATIVE, reason="int8 decoders run on the native kernels")
def test_an_int8_decoder_caches_int8_cross_states_quantized_from_the_bfloat16_ones_the_window_hands_on():
    """An int8 decoder's cache holds the cross-attention states in int8 (a scale a vector, each value within half a
    step of the state), made from the bfloat16 states the window keeps for drafters and the next call, not from a
    float32 copy twice their size."""
    pipeline = WindowPipeline(MAIN, None, compute=parse_compute_type("int8"))
    with torch.inference_mode():
        encoded = pipeline.encoder(features_for(MAIN, 0))
        keys, values = pipeline.runner.cross_attention_states(encoded, pipeline.encoder.cross_projection)
        cache = pipeline.runner.new_cache(encoded, cross_states=(keys, values))
    assert {state.dtype for state in keys + values} == {torch.bfloat16}
    assert {state.dtype for state in cache.cross_values} == {torch.int8}
    assert {state.dtype for state in cache.cross_keys} == {torch.uint8}  # q + 128, as the int8 scores read them
    assert len(cache.cross_key_scales) == len(cache.cross_value_scales) == len(keys)
    for quantized, scale, state in zip(cache.cross_values, cache.cross_value_scales, values):
        error = (quantized.float() * scale[..., None] - state.float()).abs()
        assert (error <= scale[..., None] / 2 + 1e-6).all()
        assert scale.max() > 0
    # the float32 decoder's cache keeps the states as they come
    float32 = WindowPipeline(MAIN, None, compute=parse_compute_type("int8:float32")).runner
    assert float32.new_cache(encoded, cross_states=(keys, values)).cross_key_scales is None
