"""transcribe_batch honours every transcription option as transcribe does (each audio as
`transcribe(audio, long_form="chunked")`), or refuses it by name: on a tiny random Whisper converted from a
CTranslate2 checkpoint (Whisper's tokenizer and timestamp tokens). A new TranscribeOptions field fails
`test_every_option_is_covered` until it is placed in one of the lists below."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from asr_specdec.errors import SpecdecError
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.options import TranscribeOptions
from asr_specdec.whisper.runtime.tokens import Suppression

from .test_transcriber_longform import converted

pytest.importorskip("ctranslate2")

# option -> a value other than the default, each changing the outcome of these files
HONOURED = {
    "initial_prompt": "hello world",
    "prefix": "hello",
    "hotwords": "world",
    "timestamps": True,
    "word_timestamps": True,
    "max_new_tokens": 3,
    "repetition_penalty": 1.5,
    "no_repeat_ngram_size": 1,
    "chunk_length": 10,
    "whole_features": True,
    "suppression": Suppression(tokens=(363, 628, 1564)),  # the random model's favourite tokens
    "recipe": {"beam_size": 2},  # recipe fields go by name, as transcribe takes them
    "sampling": {"do_sample": True, "temperature": 0.9},  # with a seed: test_sampled_batches_are_seeded
}
# refused by name: they need an audio's windows decoded one after another
REFUSED = {"vad_filter": True, "condition_on_previous_text": True, "hallucination_silence_threshold": 1.0,
           "diarize": 2}
# options whose effect is tested elsewhere in this file, or that only shape others
COVERED_OTHERWISE = {
    "language": "the tiny model is English-only: test_batch_real.py::test_language_and_task_in_a_batch (base)",
    "task": "test_batch_real.py::test_language_and_task_in_a_batch (base)",
    "multilingual": "test_batch_real.py::test_language_and_task_in_a_batch (base)",
    "seed": "test_sampled_batches_are_seeded",
    "long_form": "a batch is chunked by definition; 'sequential' (the default) and 'chunked' give the same batch",
    "seek_to_words": "the sequential seek of long audio; a batch's windows are chunked (test_longform_real.py)",
    "vad_options": "only with vad_filter, which is refused",
    "vad_batch_size": "only with vad_filter, which is refused",
    "prepend_punctuations": "with word_timestamps (words.py; one path for both)",
    "append_punctuations": "with word_timestamps (words.py; one path for both)",
    "faster_whisper_windows": "splits timestamped windows and aligns words as faster-whisper's batched pipeline: "
                              "test_longform.py::test_batched_segments_split_as_faster_whispers_batched_pipeline, "
                              "compat/test_faster_whisper_reference.py::test_batched_transcribe",
}


@pytest.fixture(scope="module")
def main_pair(tmp_path_factory):
    return converted(tmp_path_factory, 0)


@pytest.fixture(scope="module")
def audios():
    noise = np.random.default_rng(0).standard_normal(16000 * 75).astype(np.float32) * 0.1
    return [noise[: 16000 * 42], noise[16000 * 20:]]  # two files of two or three quiet-point windows each


def _overrides(name, value) -> dict:
    if name == "recipe":
        return value
    if name == "sampling":
        return {}
    return {name: value}


def _whisper(main_pair, name=None, value=None, mode="off", **options):
    """A transcriber of the tiny model; its no-speech judgement off (the random model's windows would all be silent,
    and a silent window's text cannot show an option's effect)."""
    sampling = value if name == "sampling" else {}
    return SpeculativeWhisper(main_pair, mode=mode, compute_type="float32", no_speech_threshold=None, **sampling,
                              **options)


def _outcome(result):
    return result.tokens, [(segment.start, segment.end, segment.text, segment.words) for segment in result.segments]


def test_every_option_is_covered():
    names = {item.name for item in fields(TranscribeOptions)}
    placed = set(HONOURED) | set(REFUSED) | set(COVERED_OTHERWISE)
    assert names == placed, f"place these in HONOURED, REFUSED or COVERED_OTHERWISE: {sorted(names ^ placed)}"


@pytest.fixture(scope="module")
def default_batch(main_pair, audios):
    return [_outcome(result) for result in _whisper(main_pair).transcribe_batch(audios, batch_size=3)]


@pytest.mark.parametrize("name", sorted(set(HONOURED) - {"sampling"}))
def test_each_option_changes_a_batch_as_it_changes_transcribe(main_pair, audios, default_batch, name):
    value = HONOURED[name]
    whisper = _whisper(main_pair, name, value)
    overrides = _overrides(name, value)
    batched = [_outcome(result) for result in whisper.transcribe_batch(audios, batch_size=3, **overrides)]
    alone = [_outcome(whisper.transcribe(audio, long_form="chunked", **overrides)) for audio in audios]
    assert batched == alone
    assert batched != default_batch, f"{name} changed nothing: the test cannot tell it is honoured"


def test_speculative_batch_equals_plain_with_options(main_pair, audios):
    options = {"initial_prompt": "hello world", "hotwords": "world", "word_timestamps": True, "max_new_tokens": 20}
    plain = _whisper(main_pair).transcribe_batch(audios, **options)
    speculative = _whisper(main_pair, mode="early-exit", assistant_early_exit=1)
    results = speculative.transcribe_batch(audios, **options)
    assert [_outcome(result) for result in results] == [_outcome(result) for result in plain]
    assert sum(result.stats.drafted_tokens for result in results) > 0


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_options_a_batch_cannot_apply_are_refused_by_name(main_pair, audios, name):
    whisper = SpeculativeWhisper(main_pair, mode="off")
    extra = {"word_timestamps": True} if name == "hallucination_silence_threshold" else {}
    with pytest.raises(SpecdecError, match=name):
        whisper.transcribe_batch(audios, **{name: REFUSED[name]}, **extra)
    with pytest.raises(SpecdecError, match=name):  # a transcriber's default is refused the same way
        SpeculativeWhisper(main_pair, mode="off", **{name: REFUSED[name]}, **extra).transcribe_batch(audios)


def test_sampled_batches_are_seeded(main_pair, audios, default_batch):
    """Sampling (the transcriber's) changes a batch, and a seed makes it reproducible; the rows draw from one random
    source in batch order, so a sampled batch is not the files sampled one by one."""
    whisper = _whisper(main_pair, "sampling", HONOURED["sampling"])
    first, again = ([_outcome(result) for result in whisper.transcribe_batch(audios, seed=5)] for _ in range(2))
    assert first == again != default_batch
    assert [_outcome(result) for result in whisper.transcribe_batch(audios, seed=6)] != first


def test_bad_batch_size_is_one_line(main_pair, audios):
    with pytest.raises(SpecdecError, match="batch_size must be at least 1"):
        SpeculativeWhisper(main_pair, mode="off").transcribe_batch(audios, batch_size=0)
