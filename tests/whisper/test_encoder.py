"""The encoder in each precision: bfloat16's fused forward is the model's forward in bfloat16, int8's native
products (bfloat16 or float32 in and out, a scale per output column, per-row int8 activations) stay close to
float32, float32 between them where the CPU lacks native bfloat16, and
the decoder's cross-attention keys/values projected by them in one product match the per-layer projections."""

from __future__ import annotations

import ctypes

import pytest
import torch

from asr_specdec.native.packing import pack_linear
from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner
from asr_specdec.whisper.runtime.encoder import EncoderRunner, native_int8_products

from ..tiny_whisper import features_for, tiny_whisper

MODEL = tiny_whisper(0, layers=3)
needs_int8 = pytest.mark.skipif(not native_int8_products(), reason="native int8 products need AVX512-VNNI")


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).norm() / b.float().norm())


@pytest.mark.parametrize("precision, tolerance", [("bfloat16", 0.05), ("int8", 0.1)])  # a random model: large errors
def test_reduced_encoders_stay_close_to_float32(precision, tolerance):
    features = features_for(MODEL, 0)
    with torch.inference_mode():
        expected = EncoderRunner(MODEL.model.encoder, "float32")(features)
        actual = EncoderRunner(MODEL.model.encoder, precision)(features)
    assert actual.dtype == torch.float32 and actual.shape == expected.shape
    assert 0 < relative(actual, expected) < tolerance


@pytest.mark.parametrize("native", [False, True])
def test_a_bfloat16_encoder_says_so_where_the_cpu_emulates_bfloat16(monkeypatch, native):
    import warnings

    from asr_specdec.native import backend

    monkeypatch.setattr(backend, "native_bfloat16", lambda: native)
    for precision in ("bfloat16", "float32"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            EncoderRunner(MODEL.model.encoder, precision)
        said = [str(warning.message) for warning in caught if "emulated bfloat16" in str(warning.message)]
        assert len(said) == (precision == "bfloat16" and not native), (precision, said)


@needs_int8
def test_the_int8_layers_write_over_one_buffer_a_part_within_a_window_and_let_them_go_after_it():
    # every layer's output of a part is the same buffer, rewritten (faulted in once a window, not once a layer);
    # a window's result is still its own, whichever window ran before, and nothing is held after it
    runner = EncoderRunner(MODEL.model.encoder, "int8")
    products, written = runner.backend.products, []
    product = products.product

    def recording(packed, inputs, gelu=False, dtype=None, out=None):
        written.append(None if out is None else out.data_ptr())
        return product(packed, inputs, gelu, dtype, out)

    products.product = recording
    first, second = features_for(MODEL, 0), features_for(MODEL, 1)
    with torch.inference_mode():
        alone = EncoderRunner(MODEL.model.encoder, "int8")(second)
        runner(first)
        after_another = runner(second)
    assert torch.equal(after_another, alone)
    layers = len(MODEL.model.encoder.layers)
    window = written[: 4 * layers]
    assert None not in window and len(set(window)) == 4  # qkv, out, fc1, fc2: one buffer each, every layer
    assert products._outputs == {}


@needs_int8
@pytest.mark.parametrize("gelu", [False, True])
def test_int8_products_take_and_give_bfloat16_or_float32_from_the_same_integers(gelu):
    from asr_specdec.native import kernels

    generator = torch.Generator().manual_seed(int(gelu))
    weight, bias = torch.randn(150, 128, generator=generator) * 0.1, torch.randn(150, generator=generator)
    x = torch.randn(100, 128, generator=generator).bfloat16()
    x[7, 3] = 80.0  # an outlier dimension: multiplied in float32
    packed = pack_linear(weight, bias, "int8-vnni")
    out = torch.empty(100, 150, dtype=torch.bfloat16)
    status = kernels().linear_int8_bf16(ctypes.byref(packed.struct), 100, x.data_ptr(), 128, out.data_ptr(), 150,
                                        int(gelu), 2)
    wide, x_wide = torch.empty(100, 150), x.float()
    wide_status = kernels().linear_int8_f32(ctypes.byref(packed.struct), 100, x_wide.data_ptr(), 128,
                                            wide.data_ptr(), 150, int(gelu), 2)
    expected = x.float() @ weight.T + bias
    expected = torch.nn.functional.gelu(expected) if gelu else expected
    assert status == 0 and wide_status == 0
    assert relative(out, expected) < 0.02
    assert relative(out[7], expected[7]) < 0.02
    assert torch.equal(wide.bfloat16(), out)  # one kernel: the float32 form rounded is the bfloat16 form
    assert not torch.equal(wide, out.float())


def _float32_activations(monkeypatch, float32: bool = True) -> None:
    """As on a CPU without native bfloat16 (AVX2, NEON): the int8 encoder keeps float32 between its products (with
    `float32=False`, as on the AVX-512 build: bfloat16), whichever build runs the test."""
    from dataclasses import replace

    import asr_specdec.native as native

    here = native.capabilities()
    between = "float32" if float32 else "bfloat16"
    monkeypatch.setattr(native, "capabilities", lambda: replace(here, int8_between=between))


@needs_int8
def test_without_native_bfloat16_the_int8_encoder_runs_float32_between_its_products(monkeypatch):
    features = features_for(MODEL, 2)
    with torch.inference_mode():
        expected = EncoderRunner(MODEL.model.encoder, "float32")(features)
        _float32_activations(monkeypatch, float32=False)
        bfloat16_between = EncoderRunner(MODEL.model.encoder, "int8")(features)
        _float32_activations(monkeypatch)
        runner = EncoderRunner(MODEL.model.encoder, "int8")
        float32_between = runner(features)
    backend = runner.backend
    assert backend.products.dtype == torch.float32 and backend.encoder is MODEL.model.encoder  # no bfloat16 copy
    assert 0 < relative(float32_between, expected) < relative(bfloat16_between, expected)


@needs_int8
@pytest.mark.parametrize("dot_product", [True, False])
def test_the_float32_form_multiplies_weights_by_values_in_int8_only_with_a_dot_product_instruction(monkeypatch,
                                                                                                  dot_product):
    """Head size 32, so the native attention runs: int8 scores always, int8 weights x values (level 2) only where
    the build has an int8 dot-product instruction (with the sign trick they are slower than float32)."""
    from dataclasses import replace

    import asr_specdec.native as native

    model = tiny_whisper(0, layers=1, d_model=128)
    features = features_for(model, 2)
    here = native.capabilities()
    monkeypatch.setattr(native, "capabilities",
                        lambda: replace(here, int8_between="float32", int8_dot_product=dot_product))
    levels, original = [], native.kernels().encoder_attention_f32

    def spy(*arguments):
        levels.append(arguments[5])
        return original(*arguments)

    monkeypatch.setattr(native.kernels(), "encoder_attention_f32", spy)
    with torch.inference_mode():
        expected = EncoderRunner(model.model.encoder, "float32")(features)
        encoded = EncoderRunner(model.model.encoder, "int8")(features)
    assert levels and set(levels) == {2 if dot_product else 1}
    assert 0 < relative(encoded, expected) < 0.1


@needs_int8
def test_cross_attention_states_from_one_int8_product_match_each_projection():
    runner = WhisperDecoderRunner(MODEL, weights="float32", cross_dtype=torch.bfloat16)
    encoder = EncoderRunner(MODEL.model.encoder, "int8")
    with torch.inference_mode():
        states = encoder(features_for(MODEL, 1))
        expected = runner.cross_attention_states(states)
        actual = runner.cross_attention_states(states, encoder.cross_projection)
    for side in (0, 1):
        for layer_expected, layer_actual in zip(expected[side], actual[side]):
            assert layer_actual.shape == layer_expected.shape and layer_actual.dtype == torch.bfloat16
            assert relative(layer_actual, layer_expected) < 0.03


@needs_int8
def test_the_cross_projection_in_bfloat16_is_its_float32_form_rounded():
    """The decoder's cross-attention keys/values come out of the int8 product in bfloat16 directly: the same bits
    as the float32 product rounded (what they were before), at half the memory."""
    encoder = EncoderRunner(MODEL.model.encoder, "int8")
    linears = [linear for layer in MODEL.model.decoder.layers
               for linear in (layer.encoder_attn.k_proj, layer.encoder_attn.v_proj)]
    with torch.inference_mode():
        states = encoder(features_for(MODEL, 1)).bfloat16()
        narrow = encoder.cross_projection(linears, states)
        wide = encoder.cross_projection(linears, states.float())
    assert len(narrow) == len(linears) and all(part.dtype == torch.bfloat16 for part in narrow)
    assert all(part.dtype == torch.float32 for part in wide)
    assert all(torch.equal(n, w.bfloat16()) for n, w in zip(narrow, wide))
    assert not all(torch.equal(n.float(), w) for n, w in zip(narrow, wide))


@pytest.mark.parametrize("precision", ["bfloat16", pytest.param("int8", marks=needs_int8),
                                       pytest.param("int8 with float32 between", marks=needs_int8)])
def test_a_warm_start_reads_the_disk_copy_not_the_float32_weights(precision, tmp_path, monkeypatch):
    """Once a precision's copy of the encoder is on disk, a new process builds its encoder from that copy: the
    float32 weights of the layers are never read (so they are never paged in). Shown by poisoning them."""
    import copy

    from asr_specdec.whisper.runtime import encoder as encoder_module

    if precision.endswith("float32 between"):
        _float32_activations(monkeypatch)
        precision = "int8"
    monkeypatch.setenv("ASR_SPECDEC_CACHE", str(tmp_path))
    features = features_for(MODEL, 1)
    model = copy.deepcopy(MODEL)
    with torch.inference_mode():
        cold = EncoderRunner(model.model.encoder, precision, weights_key="warm-start-test")(features)
        encoder_module._ENCODER_COPIES.clear()  # as a new process: nothing in memory but the model
        for layer in model.model.encoder.layers:
            for module in layer.modules():
                if isinstance(module, torch.nn.Linear):
                    module.weight.fill_(1e3)
        warm = EncoderRunner(model.model.encoder, precision, weights_key="warm-start-test")(features)
        encoder_module._ENCODER_COPIES.clear()
        unkeyed = EncoderRunner(model.model.encoder, precision)(features)  # without a disk copy: the poison shows
    assert torch.equal(warm, cold)
    assert not torch.allclose(unkeyed, cold, atol=1e-2)


@pytest.mark.parametrize("attention_kernel", [True, False])
def test_one_function_chooses_the_encoders_arithmetic_from_the_capabilities(monkeypatch, attention_kernel):
    """encoder_backend: float32 the model's own forward (no copy), bfloat16 the fused forward, int8 the native
    products where they run; the native attention only where capabilities() offers it and the heads fit."""
    from dataclasses import replace

    import asr_specdec.native as native
    from asr_specdec.whisper.runtime.encoder import FusedForward, ModelForward, NativeAttention, encoder_backend

    model = tiny_whisper(0, layers=1, d_model=128)  # head size 32: the kernel's
    here = native.capabilities()
    monkeypatch.setattr(native, "capabilities", lambda: replace(here, encoder_attention=attention_kernel and
                                                                 here.encoder_attention))
    float32 = encoder_backend(model.model.encoder, "float32", None)
    assert isinstance(float32, ModelForward) and float32.encoder is model.model.encoder
    assert float32.products is None and float32.cross_projection is None
    for precision in ("bfloat16", "int8") if native_int8_products(model.model.encoder) else ("bfloat16",):
        fused = encoder_backend(model.model.encoder, precision, None)
        assert isinstance(fused, FusedForward) and (fused.products is not None) == (precision == "int8")
        assert isinstance(fused.attend, NativeAttention) == (attention_kernel and here.encoder_attention)
        if precision == "int8":
            assert fused.cross_projection == fused.products.cross


@needs_int8
def test_the_int8_products_refuse_a_dtype_their_kernels_do_not_take():
    products = EncoderRunner(MODEL.model.encoder, "int8").backend.products
    packed = products.layers[0]["out"]
    with pytest.raises(ValueError, match="bfloat16 or float32, not torch.float16"):
        products.product(packed, torch.zeros(3, packed.k, dtype=torch.float16), dtype=torch.float16)
