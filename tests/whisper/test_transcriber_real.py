"""The core invariant on real weights and real speech: every drafter returns exactly the main model's
greedy tokens on a third of the shared clips, every clip decoded by some drafter, and our plain loop returns
exactly transformers' generate() tokens."""

from __future__ import annotations

import copy

import pytest
import torch

from asr_specdec.errors import ModelError, OptionError
from asr_specdec.native import capabilities, kernels
from asr_specdec.weights.whisper_models import load_whisper
from asr_specdec.whisper import SpeculativeWhisper

pytestmark = pytest.mark.slow
FLOAT32 = {"compute_type": "float32"}  # transformers' generate() runs in float32: compare like with like


@pytest.fixture(scope="module")
def base(base_dir):
    return load_whisper(str(base_dir))


@pytest.fixture(scope="module")
def tiny_en(tiny_en_dir):
    return load_whisper(str(tiny_en_dir))


@pytest.fixture(scope="module")
def clips(shared_audio, manifest):
    from asr_specdec.whisper.io.audio import load_audio

    return {entry["audio"]: load_audio(shared_audio / entry["audio"]) for entry in manifest}


@pytest.fixture(scope="module")
def plain_tokens(base, clips):
    plain = SpeculativeWhisper(base, mode="off", language="en", **FLOAT32)
    return {name: plain.transcribe(samples).tokens for name, samples in clips.items()}


def test_plain_loop_equals_transformers_generate(base, clips, plain_tokens):
    eos = base.model.generation_config.eos_token_id
    # every other clip (the suite's time): the 16-s one, the mp3 and a 22-kHz one among them
    for name in list(clips)[0::2]:
        samples = clips[name]
        features = base.processor(samples, sampling_rate=16000, return_tensors="pt").input_features
        with torch.inference_mode():
            expected = base.model.generate(features, language="en", task="transcribe")[0].tolist()
        assert plain_tokens[name][-1] == eos, name
        assert plain_tokens[name][:-1] == expected, name


DRAFTERS = [  # (mode, options); the n-th decodes every third clip from clip n % 3
    ("quantized-self", {"num_draft_tokens": 6}),
    ("quantized-self", {"num_draft_tokens": 2, "dynamic": True}),
    ("prompt-lookup", {"num_draft_tokens": 4}),  # the third with the 16-s clip: an n-gram seen earlier to propose
    ("early-exit", {"assistant_early_exit": 3}),
    ("assistant", {"assistant_is_main": True, "num_draft_tokens": 8}),
]


@pytest.mark.parametrize("first, mode, options",
                         [(index % 3, mode, options) for index, (mode, options) in enumerate(DRAFTERS)])
def test_every_drafter_is_exact_on_real_clips(base, clips, plain_tokens, first, mode, options):
    options = dict(options)
    if options.pop("assistant_is_main", False):
        options["assistant_model"] = base
    speculative = SpeculativeWhisper(base, mode=mode, language="en", **options, **FLOAT32)
    drafted = accepted = 0
    # every third clip (the suite's time: 12 clips x 5 drafters was 120 s of it): each drafter on four clips,
    # and the three thirds together cover every clip
    for name in list(clips)[first::3]:
        result = speculative.transcribe(clips[name])
        assert result.tokens == plain_tokens[name], (mode, name)
        drafted += result.stats.drafted_tokens
        accepted += result.stats.accepted_tokens
    assert drafted > 0
    if mode == "assistant":  # the main model drafting for itself, in a drafter's int8 formats: mostly agreed with
        assert accepted > drafted / 2
        assert kernels() is None or speculative.drafter.runner.weights == capabilities().fastest_int8


def test_universal_pair_base_with_tiny_en(base, tiny_en, clips, plain_tokens):
    universal = SpeculativeWhisper(base, mode="universal", assistant_model=tiny_en, language="en", **FLOAT32)
    accepted = 0
    # every other clip (the suite's time), those with digits among them ("1813", "10 meters") and the 16-s one
    for name in list(clips)[0::2]:
        result = universal.transcribe(clips[name])
        assert result.tokens == plain_tokens[name], name
        accepted += result.stats.accepted_tokens
    assert accepted > 0  # the English-only assistant does predict the multilingual model's text


def test_tiny_en_plain_equals_transformers_generate(tiny_en, clips):
    plain = SpeculativeWhisper(tiny_en, mode="off", **FLOAT32)
    speculative = SpeculativeWhisper(tiny_en, mode="quantized-self", **FLOAT32)
    for name, samples in list(clips.items())[:4]:
        features = tiny_en.processor(samples, sampling_rate=16000, return_tensors="pt").input_features
        with torch.inference_mode():
            expected = tiny_en.model.generate(features)[0].tolist()
        tokens = plain.transcribe(samples).tokens
        assert tokens[:-1] == expected, name
        assert speculative.transcribe(samples).tokens == tokens, name


def test_fixed_seed_sampling_is_reproducible(base, clips):
    samples = clips["librivox-0890.wav"]
    runs = [SpeculativeWhisper(base, mode="quantized-self", language="en", do_sample=True, temperature=0.9,
                               seed=7).transcribe(samples).tokens for _ in range(2)]
    assert runs[0] == runs[1]
    other_seed = SpeculativeWhisper(base, mode="quantized-self", language="en", do_sample=True,
                                    temperature=1.5, seed=8).transcribe(samples).tokens
    assert other_seed != runs[0]


def test_language_is_detected_when_not_given(base, clips):
    result = SpeculativeWhisper(base, mode="off").transcribe(clips["librivox-0880.wav"])
    assert result.language == "en"
    assert "ill-disposed young man" in result.text


def test_mismatched_pairs_are_refused(base, tiny_en):
    with pytest.raises(OptionError, match='use mode="universal"'):  # a Python user is answered in Python
        SpeculativeWhisper(base, mode="assistant", assistant_model=tiny_en)
    with pytest.raises(ModelError, match="out of range"):
        SpeculativeWhisper(base, mode="early-exit", assistant_early_exit=6)
    on_other_device = copy.deepcopy(tiny_en.model).to("meta")
    with pytest.raises(ModelError, match="device"):
        SpeculativeWhisper(base, mode="universal", assistant_model=(on_other_device, tiny_en.processor))


def test_long_audio_reports_progress_per_window(tiny_en, clips):
    import numpy as np

    long_audio = np.concatenate([clips["libri-1088-134315-0000.wav"]] * 5)  # 80 s: three windows
    calls = []
    result = SpeculativeWhisper(tiny_en, mode="off", long_form="chunked").transcribe(
        long_audio, progress=lambda f, what: calls.append(f))
    assert len(result.window_tokens) == 3
    assert calls == sorted(calls) and calls[0] == 0.0 and calls[-1] == 1.0 and len(calls) == 4
    assert result.segments[-1].end == pytest.approx(result.duration, abs=0.01)
