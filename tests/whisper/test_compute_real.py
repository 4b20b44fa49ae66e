"""Compute types on real weights and the shared clips: speculative tokens equal plain tokens at each compute type
offered on this machine (each on a third of the clips, every clip at some type; emulated bfloat16 on one); the
default (auto) keeps float32's word error rate; the lean loader (no transformers modeling code) computes
transformers' own features, encoder output and text."""

from __future__ import annotations

import pytest
import torch

from asr_specdec.native.backend import native_bfloat16
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.runtime.compute import auto_compute_type
from asr_specdec.whisper.runtime.decoder import native_decoder_unavailable
from asr_specdec.whisper.runtime.lean_model import load_lean_whisper
from asr_specdec.whisper.runtime.lean_processor import load_lean_processor

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lean(base_dir):
    return load_lean_whisper(base_dir), load_lean_processor(base_dir)


@pytest.fixture(scope="module")
def clips(shared_audio, manifest):
    from asr_specdec.whisper.io.audio import load_audio

    return {entry["audio"]: (load_audio(shared_audio / entry["audio"]), entry["reference"]) for entry in manifest}


@pytest.fixture(scope="module")
def float32_plain(lean, clips):
    """On the clips with a reference transcript: the word error rate's."""
    plain = SpeculativeWhisper(lean, mode="off", language="en", compute_type="float32")
    return {name: plain.transcribe(samples) for name, (samples, reference) in clips.items() if reference}


def compute_types(model) -> list[str]:
    offered = list(dict.fromkeys([auto_compute_type("cpu").name, "int8:float32", "bfloat16:float32"]))
    if native_decoder_unavailable(model) is None:
        offered += ["bfloat16", "int8"]
    return list(dict.fromkeys(offered))


def test_speculative_equals_plain_at_every_compute_type(lean, clips, float32_plain):
    from eval.metrics import wer

    scored = list(float32_plain)
    references = [clips[name][1] for name in scored]
    float32_wer = wer(references, [float32_plain[name].text for name in scored])
    default = auto_compute_type("cpu").name
    offered = compute_types(lean[0])
    thirds = min(3, len(offered))  # (halves where two types are offered)
    for index, compute in enumerate(offered):
        plain = SpeculativeWhisper(lean, mode="off", language="en", compute_type=compute)
        speculative = SpeculativeWhisper(lean, mode="quantized-self", language="en", compute_type=compute)
        expected, drafted = {}, 0
        # speculative against plain on every third clip, a different third at each type, so that every clip is
        # decoded at some type (the suite's time: this test was 400 s of it on 2 cores, then every clip at the default
        # and every third at the others; tests/whisper/test_compute_exact.py covers every type on small shapes).
        # bfloat16 on a CPU without it (its encoder on PyTorch's emulated products, ~9 s a clip on a Zen 3, 7x int8's;
        # 150 s of this test there) on one clip of its third
        third = list(clips)[index % thirds::thirds]
        emulated = compute.startswith("bfloat16") and not native_bfloat16()
        for name in third[:1] if emulated else third:
            samples = clips[name][0]
            expected[name] = plain.transcribe(samples)
            result = speculative.transcribe(samples)
            assert result.tokens == expected[name].tokens, (compute, name)
            drafted += result.stats.drafted_tokens
        assert drafted > 0
        if compute == default:  # the default keeps float32's word error rate (plain, on every clip it is scored on)
            texts = [(expected.get(name) or plain.transcribe(clips[name][0])).text for name in scored]
            assert wer(references, texts) == float32_wer, compute


def test_lean_loading_computes_what_transformers_computes(base_dir, lean, clips, float32_plain):
    from asr_specdec.weights.whisper_models import load_whisper

    reference = load_whisper(str(base_dir))
    model, processor = lean
    for name in list(clips)[2:4]:
        samples = clips[name][0]
        features = processor(samples, sampling_rate=16000, return_tensors="pt").input_features
        expected = reference.processor(samples, sampling_rate=16000, return_tensors="pt").input_features
        assert torch.equal(features, expected), name
        with torch.inference_mode():
            assert torch.equal(model.model.encoder(features).last_hidden_state,
                               reference.model.model.encoder(features).last_hidden_state), name
    for name, result in float32_plain.items():
        # the tokens decode to exactly the text, Whisper's leading space included
        assert result.text == reference.processor.tokenizer.decode(result.tokens, skip_special_tokens=True), name
