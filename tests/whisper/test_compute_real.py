"""Compute types on real weights and every shared clip: speculative tokens equal plain tokens at each compute type
offered on this machine; the default (auto) keeps float32's word error rate; the lean loader (no transformers
modeling code) computes transformers' own features, encoder output and text."""

from __future__ import annotations

import pytest
import torch

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
    plain = SpeculativeWhisper(lean, mode="off", language="en", compute_type="float32")
    return {name: plain.transcribe(samples) for name, (samples, _) in clips.items()}


def compute_types(model) -> list[str]:
    offered = list(dict.fromkeys([auto_compute_type("cpu").name, "int8:float32", "bfloat16:float32"]))
    if native_decoder_unavailable(model) is None:
        offered += ["bfloat16", "int8"]
    return list(dict.fromkeys(offered))


def test_speculative_equals_plain_at_every_compute_type(lean, clips, float32_plain):
    from eval.metrics import wer

    scored = [name for name, (_, reference) in clips.items() if reference]
    references = [clips[name][1] for name in scored]
    float32_wer = wer(references, [float32_plain[name].text for name in scored])
    default = auto_compute_type("cpu").name
    for compute in compute_types(lean[0]):
        plain = SpeculativeWhisper(lean, mode="off", language="en", compute_type=compute)
        speculative = SpeculativeWhisper(lean, mode="quantized-self", language="en", compute_type=compute)
        texts, drafted = {}, 0
        # the default on every clip (its word error rate is checked), the others on every third (the suite's time:
        # this test was 400 s of it on 2 cores; tests/whisper/test_compute_exact.py covers every type on small shapes)
        names = list(clips) if compute == default else list(clips)[0::3]
        for name in names:
            samples = clips[name][0]
            expected = plain.transcribe(samples)
            result = speculative.transcribe(samples)
            assert result.tokens == expected.tokens, (compute, name)
            texts[name] = expected.text
            drafted += result.stats.drafted_tokens
        assert drafted > 0
        if compute == default:  # the default keeps float32's word error rate
            assert wer(references, [texts[name] for name in scored]) == float32_wer, compute


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
