"""The transcription recipe on tiny random Whispers (converted from CTranslate2 checkpoints, with a real tokenizer,
timestamp tokens and alignment heads): every drafter gives plain greedy's segments, words and scores with each
feature on; fallback retries sample exactly the main model's distribution, reproducibly; prompts are built and
truncated as openai's."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
import torch
from scipy.stats import chi2_contingency

from asr_specdec.core.logits import Sampling
from asr_specdec.errors import SpecdecError
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.drafters import QuantizedSelfDrafter
from asr_specdec.whisper.options import PromptTruncated
from asr_specdec.whisper.runtime.pipeline import Window, WindowPipeline
from eval.bench.recipe import paused_clips

from ..tiny_ct2 import converted_whisper
from ..tiny_whisper import DraftedPipeline, tiny_whisper

pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def main_pair(tmp_path_factory):
    return converted_whisper(tmp_path_factory.mktemp("recipe_main"), 0)


@pytest.fixture(scope="module")
def other_pair(tmp_path_factory):
    return converted_whisper(tmp_path_factory.mktemp("recipe_other"), 1)


@pytest.fixture(scope="module")
def audio():
    return np.random.default_rng(3).standard_normal(16000 * 45).astype(np.float32) * 0.1


FEATURES = {
    "word-timestamps": {"word_timestamps": True},
    "prompts": {"initial_prompt": "alpha beta", "hotwords": "gamma"},
    "prefix-and-words": {"prefix": "so", "word_timestamps": True},
    "no-speech-and-fallback-thresholds": {"no_speech_threshold": 0.0001, "logprob_threshold": -50.0,
                                          "compression_ratio_threshold": 100.0, "temperature_fallback": True},
    "chunked-words": {"word_timestamps": True, "long_form": "chunked"},
}
DRAFTERS = {
    "quantized-self": {},
    "early-exit": {"assistant_early_exit": 1},
    "prompt-lookup": {},
    "assistant": {"assistant_is_other": True},
    "universal": {"assistant_is_other": True},
}


@pytest.fixture(scope="module")
def plain_results(main_pair, audio):
    plain = SpeculativeWhisper(main_pair, mode="off")
    return {name: plain.transcribe(audio, **options) for name, options in FEATURES.items()}


@pytest.mark.parametrize("mode", DRAFTERS)
def test_every_drafter_equals_plain_greedy_with_each_feature(main_pair, other_pair, audio, plain_results, mode):
    options = dict(DRAFTERS[mode])
    if options.pop("assistant_is_other", False):
        options["assistant_model"] = other_pair
    speculative = SpeculativeWhisper(main_pair, mode=mode, num_draft_tokens=4, **options)
    for name, features in FEATURES.items():
        plain = plain_results[name]
        result = speculative.transcribe(audio, **features)
        assert result.tokens == plain.tokens, name
        assert result.segments == plain.segments, name  # times, text, words, scores
        assert result.text == plain.text


@pytest.fixture(scope="module")
def speech_with_pauses(shared_audio):
    """Four shared clips (35 s of speech) with 3 s of silence or noise between them: VAD packs them into two
    windows, decoded as two rows of one batch."""
    return paused_clips(shared_audio, [(3.0, "silence"), (3.0, "noise")],
                        ["libri-1088-134315-0000.wav", "librivox-0870.wav", "librivox-0890.wav",
                         "librivox-0920.wav"])[0]


def test_every_drafter_equals_plain_greedy_with_vad(main_pair, other_pair, speech_with_pauses):
    """VAD windows are rows of one decode call: each drafter gives plain greedy's segments and words (silence
    judging off, so that the random model's windows keep their text)."""
    options = {"vad_filter": True, "word_timestamps": True, "no_speech_threshold": None, "silence_threshold": None}
    plain = SpeculativeWhisper(main_pair, mode="off").transcribe(speech_with_pauses, **options)
    assert len(plain.window_tokens) >= 2 and any(segment.words for segment in plain.segments)
    for mode, settings in DRAFTERS.items():
        settings = dict(settings)
        if settings.pop("assistant_is_other", False):
            settings["assistant_model"] = other_pair
        speculative = SpeculativeWhisper(main_pair, mode=mode, num_draft_tokens=4, **settings)
        result = speculative.transcribe(speech_with_pauses, **options)
        assert result.tokens == plain.tokens and result.segments == plain.segments, mode


def test_the_recipe_features_do_something(plain_results, main_pair, audio):
    plain = SpeculativeWhisper(main_pair, mode="off").transcribe(audio)
    words = plain_results["word-timestamps"]
    timed = [word for segment in words.segments for word in segment.words]
    # every text token lands in one word (a word belongs to the segment where it begins, as faster-whisper's)
    assert "".join(word.word for word in timed) == words.text  # Whisper's leading space in both
    assert all(0 <= word.start <= word.end <= words.duration for word in timed)
    assert all(segment.start == segment.words[0].start for segment in words.segments if segment.words)
    assert plain_results["prompts"].tokens != plain.tokens  # the prompt conditions the decoding
    assert plain_results["prefix-and-words"].text.startswith(" so")
    # every window is silent by a no-speech threshold this low unless likely enough: the skip is the same rule
    assert all(segment.no_speech_prob is not None and segment.avg_logprob is not None for segment in plain.segments)


def test_a_looping_window_falls_back_and_the_loop_breaks(main_pair, audio):
    """The random model repeats itself under greedy decoding (a gzip ratio over 2.4); fallback samples it away."""
    options = {"no_speech_threshold": None, "logprob_threshold": None}
    looping = SpeculativeWhisper(main_pair, mode="off", **options).transcribe(audio)
    assert looping.segments[0].compression_ratio > 2.4 and looping.segments[0].temperature == 0.0
    for mode in ("off", "quantized-self"):
        retried = SpeculativeWhisper(main_pair, mode=mode, seed=7, temperature_fallback=True, **options)
        result = retried.transcribe(audio)
        assert result.segments[0].temperature > 0 and result.segments[0].compression_ratio <= 2.4
        assert retried.transcribe(audio).tokens == result.tokens  # seeded: reproducible


def sampled_tokens(pipeline, sampling: Sampling, rows: int, seed: int) -> list[tuple[int, ...]]:
    features = torch.randn(1, 8, 32, generator=torch.Generator().manual_seed(5))
    windows = [Window(features, sampling=sampling)] * rows
    return [tuple(decoded.tokens) for decoded in pipeline.decode(windows, torch.Generator().manual_seed(seed))]


def test_sampled_retries_keep_the_main_models_distribution():
    """A retry's rows sampled through the speculative loop (the int8 self-drafter sampling at the same
    temperature) against plain sampling: each of the first three tokens has the same distribution (chi-square
    homogeneity over 800 rows each, the rows of one decode call), on a tiny Whisper with a 120-token vocabulary."""
    model = tiny_whisper(4)
    sampling = Sampling(True, 0.8)

    def pipeline(drafter):
        return DraftedPipeline(WindowPipeline(model, None), drafter, draft_tokens=3, max_new_tokens=3)

    plain_samples = sampled_tokens(pipeline(None), sampling, 800, seed=1)
    speculative_samples = sampled_tokens(pipeline(QuantizedSelfDrafter(model)), sampling, 800, seed=2)
    assert len(set(plain_samples)) > 20  # a real distribution, not one sequence
    for position in range(3):
        plain_counts = Counter(sample[position] for sample in plain_samples if len(sample) > position)
        speculative_counts = Counter(sample[position] for sample in speculative_samples if len(sample) > position)
        frequent = sorted(token for token, count in (plain_counts + speculative_counts).items() if count >= 20)
        table = np.array([[counts[token] for token in frequent] + [sum(counts.values()) - sum(counts[token]
                                                                                          for token in frequent)]
                          for counts in (plain_counts, speculative_counts)])
        table = table[:, table.sum(axis=0) > 0]
        assert chi2_contingency(table).pvalue > 0.001, position


def test_rows_with_their_own_sampling_leave_a_greedy_row_exact(main_pair, audio):
    whisper = SpeculativeWhisper(main_pair, mode="quantized-self", num_draft_tokens=3)
    features = whisper.pipeline.features(audio[:16000 * 5])
    alone = whisper.decode_windows([Window(features, None, True)])[0].tokens
    mixed = whisper.decode_windows([Window(features, None, True, sampling=Sampling(True, 1.0)),
                                    Window(features, None, True),
                                    Window(features, None, True, sampling=Sampling(True, 0.5))],
                                   generator=torch.Generator().manual_seed(0))
    assert mixed[1].tokens == alone and mixed[0].tokens != alone


def test_a_prompt_over_the_limit_keeps_its_end_and_says_so(main_pair, audio):
    asr = SpeculativeWhisper(main_pair, mode="off")
    limit = asr.tokens.prompt_limit  # 31 tokens for this 64-token model
    tail = "y" * (limit - 1)  # one byte-level token per character: " " + tail is the last `limit` tokens
    with pytest.warns(PromptTruncated, match=f"only its last {limit} tokens"):
        truncated = asr.transcribe(audio[:16000 * 5], initial_prompt="x" * 100 + " " + tail)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact_fit = asr.transcribe(audio[:16000 * 5], initial_prompt=tail)
        unprompted = asr.transcribe(audio[:16000 * 5])
    assert truncated.tokens == exact_fit.tokens != unprompted.tokens


def test_unknown_option_values_are_one_line_errors(main_pair):
    for options, message in [({"temperature": [0.0, 3.0]}, "temperature"), ({"best_of": 0}, "best_of"),
                             ({"no_speech_threshold": 2.0}, "no_speech_threshold"),
                             ({"vad_options": {"treshold": 0.5}}, "unknown VAD option"),
                             ({"word_timestamp": True}, "unknown transcription option")]:
        with pytest.raises(SpecdecError, match=message) as caught:
            SpeculativeWhisper(main_pair, mode="off", **options)
        assert "\n" not in str(caught.value)
