"""SpeculativeWhisper's long-form and timestamp paths end to end (feature extraction, seeking, drafters, segment
text) on a tiny random Whisper converted from a CTranslate2 checkpoint, whose tokenizer has Whisper's 1501
timestamp tokens: against transformers' long-form generate, and speculative against plain."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from asr_specdec.errors import SpecdecError
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.io.audio import split_long_audio

from ..tiny_ct2 import write_tiny_ct2

pytest.importorskip("ctranslate2")


def converted(tmp_path_factory, seed: int):
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    from asr_specdec.weights.ct2 import convert_ct2_whisper

    source = tmp_path_factory.mktemp(f"tiny_ct2_{seed}")
    write_tiny_ct2(source, quantization="float32", seed=seed)
    out = convert_ct2_whisper(source, tmp_path_factory.mktemp(f"tiny_hf_{seed}") / "model")
    return WhisperForConditionalGeneration.from_pretrained(out).eval(), WhisperProcessor.from_pretrained(out)


@pytest.fixture(scope="module")
def main_pair(tmp_path_factory):
    return converted(tmp_path_factory, 0)


@pytest.fixture(scope="module")
def other_pair(tmp_path_factory):
    return converted(tmp_path_factory, 1)


@pytest.fixture(scope="module")
def long_audio():
    return np.random.default_rng(0).standard_normal(16000 * 75).astype(np.float32) * 0.1


@pytest.fixture(scope="module")
def plain(main_pair, long_audio):
    return SpeculativeWhisper(main_pair, mode="off").transcribe(long_audio)


def test_plain_equals_transformers_long_form_generate(main_pair, long_audio):
    # transformers seeks to a window's closing timestamp, as openai's does without word timestamps
    plain = SpeculativeWhisper(main_pair, mode="off", seek_to_words=False).transcribe(long_audio)
    model, processor = main_pair
    inputs = processor(long_audio, sampling_rate=16000, return_tensors="pt", truncation=False, padding="longest",
                       return_attention_mask=True)
    with torch.inference_mode():
        reference = model.generate(inputs.input_features, attention_mask=inputs.attention_mask,
                                   return_timestamps=True, return_segments=True)["segments"][0]
    expected = [(round(float(s["start"]), 3), round(float(s["end"]), 3),
                 processor.tokenizer.decode(s["tokens"], skip_special_tokens=True).strip()) for s in reference]
    assert [(s.start, s.end, s.text) for s in plain.segments] == [s for s in expected if s[2]]
    assert len(plain.window_tokens) >= 3
    assert plain.segments[-1].end > 60


DRAFTERS = [  # (mode, options): every drafter, the assistants another random model
    ("quantized-self", {}),
    ("early-exit", {"assistant_early_exit": 1}),
    ("prompt-lookup", {}),
    ("assistant", {"assistant_is_other": True}),
    ("universal", {"assistant_is_other": True}),
]


@pytest.mark.parametrize("mode, options", DRAFTERS)
def test_every_drafter_gives_plain_segments(main_pair, other_pair, long_audio, plain, mode, options):
    options = dict(options)
    if options.pop("assistant_is_other", False):
        options["assistant_model"] = other_pair
    result = SpeculativeWhisper(main_pair, mode=mode, num_draft_tokens=4, **options).transcribe(long_audio)
    assert result.tokens == plain.tokens
    assert result.segments == plain.segments and result.text == plain.text
    assert result.stats.drafted_tokens > 0


@pytest.mark.parametrize("mode", ["quantized-self", "universal"])
def test_conditioned_on_previous_text_speculative_equals_plain(main_pair, other_pair, long_audio, mode):
    expected = SpeculativeWhisper(main_pair, mode="off", condition_on_previous_text=True).transcribe(long_audio)
    result = SpeculativeWhisper(main_pair, mode=mode, assistant_model=other_pair if mode == "universal" else None,
                                condition_on_prev_tokens=True).transcribe(long_audio)
    assert result.tokens == expected.tokens and result.segments == expected.segments
    start_of_prev = main_pair[0].generation_config.prev_sot_token_id
    assert result.stats.new_tokens == len(result.tokens)  # prompts, previous text included, are not counted
    assert start_of_prev not in result.tokens


def test_progress_follows_the_seek_position(main_pair, long_audio):
    calls = []
    whisper = SpeculativeWhisper(main_pair, mode="off")
    result = whisper.transcribe(long_audio, progress=lambda done, _: calls.append(done))
    assert calls[0] == 0.0 and calls[-1] == 1.0 and calls == sorted(calls)
    assert len(calls) == len(result.window_tokens) + 1


def test_short_audio_with_timestamps_is_decoded_sequentially(main_pair, long_audio):
    short = long_audio[: 16000 * 8]
    speculative = SpeculativeWhisper(main_pair, mode="quantized-self", return_timestamps=True).transcribe(short)
    plain = SpeculativeWhisper(main_pair, mode="off").transcribe(short, timestamps=True)
    timestamp_begin = main_pair[0].generation_config.no_timestamps_token_id + 1
    assert speculative.tokens == plain.tokens and speculative.segments == plain.segments
    assert plain.window_tokens[0][0] >= timestamp_begin  # a window opens with a timestamp
    untimed = SpeculativeWhisper(main_pair, mode="off").transcribe(short)
    assert len(untimed.window_tokens) == 1 and untimed.tokens != plain.tokens
    assert all((segment.start, segment.end) == (0.0, 8.0) for segment in untimed.segments)


@pytest.mark.parametrize("timestamps", [False, True])
def test_chunked_mode_decodes_independent_quiet_point_windows(main_pair, long_audio, timestamps):
    plain = SpeculativeWhisper(main_pair, mode="off", long_form="chunked", timestamps=timestamps)
    speculative = SpeculativeWhisper(main_pair, mode="early-exit", assistant_early_exit=1, long_form="chunked")
    expected = plain.transcribe(long_audio)
    windows = split_long_audio(long_audio)
    assert len(expected.window_tokens) == len(windows)
    result = speculative.transcribe(long_audio, timestamps=timestamps)
    assert result.tokens == expected.tokens and result.segments == expected.segments
    offsets = [round(offset, 3) for offset, _ in windows]
    if not timestamps:  # one segment per window (the random model's windows may hold no text)
        assert {s.start for s in expected.segments} <= set(offsets)
    else:
        assert len(expected.segments) > len(windows)
    times = [time for segment in expected.segments for time in (segment.start, segment.end)]
    assert times == sorted(times) and all(time <= 75.0 for time in times)


def test_bad_long_form_options_are_clear_errors(main_pair, long_audio):
    with pytest.raises(SpecdecError, match="unknown long-form mode 'bogus'"):
        SpeculativeWhisper(main_pair, mode="off", long_form="bogus")
    whisper = SpeculativeWhisper(main_pair, mode="off")
    with pytest.raises(SpecdecError, match="unknown long-form mode"):
        whisper.transcribe(long_audio, long_form="batched")


def test_sampling_with_timestamps_keeps_whisper_structure(main_pair, long_audio):
    whisper = SpeculativeWhisper(main_pair, mode="quantized-self", do_sample=True, temperature=0.7, seed=3)
    first, second = whisper.transcribe(long_audio), whisper.transcribe(long_audio)
    assert first.tokens == second.tokens  # a fixed seed
    timestamp_begin = main_pair[0].generation_config.no_timestamps_token_id + 1
    for window in first.window_tokens:
        assert window[0] >= timestamp_begin
        stamps = [token for token in window if token >= timestamp_begin]
        assert stamps == sorted(stamps)


def test_universal_drafter_translates_exactly_when_the_assistant_is_the_main_model(main_pair, long_audio, plain):
    """Text and timestamps cross to the assistant's vocabulary and back; with the main model as its own
    assistant, a correct translation has every draft token accepted. Stated at float32: at a reduced encoder
    precision the main model's cross-attention states come from int8 products while the assistant projects
    them in float32, so near-ties on a random model may break apart (tokens stay exact either way)."""
    result = SpeculativeWhisper(main_pair, mode="universal", assistant_model=main_pair,
                                compute_type="float32").transcribe(long_audio)
    assert result.tokens == SpeculativeWhisper(main_pair, mode="off", compute_type="float32").transcribe(
        long_audio).tokens
    assert result.stats.accepted_tokens == result.stats.drafted_tokens > 0


@pytest.mark.parametrize("compute_type", ["float32", "int8:float32", "bfloat16:float32"])
def test_universal_drafter_in_a_batch(main_pair, long_audio, compute_type):
    """Exact at each compute type that runs on every CPU (stated, not left to what `auto` picks on this one);
    every draft accepted where the assistant computes the main model's numbers (float32: see the test above)."""
    clips = [long_audio[: 16000 * seconds] for seconds in (3, 9, 5)]
    expected = [SpeculativeWhisper(main_pair, mode="off", compute_type=compute_type).transcribe(clip).tokens
                for clip in clips]
    universal = SpeculativeWhisper(main_pair, mode="universal", assistant_model=main_pair, compute_type=compute_type)
    results = universal.transcribe_batch(clips, batch_size=3)
    assert [result.tokens for result in results] == expected
    drafted = sum(r.stats.drafted_tokens for r in results)
    accepted = sum(r.stats.accepted_tokens for r in results)
    assert drafted > 0 and (accepted == drafted if compute_type == "float32" else accepted > drafted // 2)


def test_long_audio_without_timestamps_is_decoded_window_after_window(main_pair, long_audio):
    """openai's and faster-whisper's `without_timestamps`: each 30-s window is one segment, the next one starts
    where it ends, and speculative output is plain output."""
    plain = SpeculativeWhisper(main_pair, mode="off").transcribe(long_audio, timestamps=False)
    # (the random model's text may hold timestamp tokens, so the 30-s cues are checked on real weights:
    # test_longform_real.py)
    assert len(plain.window_tokens) == -(-len(long_audio) // (30 * 16000)) >= 2
    assert plain.text == "".join(segment.text for segment in plain.segments)
    speculative = SpeculativeWhisper(main_pair, mode="quantized-self").transcribe(long_audio, timestamps=False)
    assert speculative.tokens == plain.tokens and speculative.segments == plain.segments


def test_repetition_rules_in_batches_and_in_the_universal_drafters_own_vocabulary(main_pair, long_audio):
    """transcribe_batch decodes under the transcriber's repetition rules, and the universal drafter applies them to
    its own tokens: drafting for itself, most drafts are the main model's choices under them (not all: the rules
    push a random model to token sequences that text re-tokenizes differently between the two sides)."""
    clips = [long_audio[: 16000 * seconds] for seconds in (3, 9)]
    repeats = {"no_repeat_ngram_size": 2, "repetition_penalty": 1.5}
    expected = [SpeculativeWhisper(main_pair, mode="off", compute_type="float32", **repeats).transcribe(clip).tokens
                for clip in clips]
    unruled = SpeculativeWhisper(main_pair, mode="off", compute_type="float32")
    assert expected != [unruled.transcribe(clip).tokens for clip in clips]
    universal = SpeculativeWhisper(main_pair, mode="universal", assistant_model=main_pair, compute_type="float32",
                                   **repeats)
    results = universal.transcribe_batch(clips, batch_size=2)
    assert [result.tokens for result in results] == expected
    drafted = sum(r.stats.drafted_tokens for r in results)
    assert drafted > 0 and sum(r.stats.accepted_tokens for r in results) > drafted * 2 // 3


CHUNK = 10  # seconds: faster-whisper's chunk_length


@pytest.fixture(scope="module")
def chunk_audio(long_audio):
    return long_audio[: 16000 * 25]  # three 10-s windows or so: the random model fills each to its last timestamp


@pytest.fixture(scope="module")
def plain_chunked(main_pair, chunk_audio):
    return SpeculativeWhisper(main_pair, mode="off").transcribe(chunk_audio, chunk_length=CHUNK)


def test_chunk_length_windows_hold_their_timestamps_and_seek_by_them(main_pair, chunk_audio, plain_chunked):
    whisper = SpeculativeWhisper(main_pair, mode="off")
    begin = whisper.tokens.timestamp_begin
    last = begin + CHUNK * 50  # <|10.00|>
    stamps = [token for tokens in plain_chunked.window_tokens for token in tokens if token >= begin]
    assert stamps and max(stamps) <= last
    # without the window's cap this random model writes timestamps up to 30 s into the padding
    whole = whisper.transcribe(chunk_audio, timestamps=True)
    assert max(token for tokens in whole.window_tokens for token in tokens if token >= begin) > last
    # segments follow each other inside 10-s windows, and the windows cover the audio
    assert len(plain_chunked.window_tokens) >= 3
    assert all(segment.end - segment.start <= CHUNK for segment in plain_chunked.segments)
    assert plain_chunked.segments[-1].end > 20
    assert plain_chunked.tokens != whole.tokens


@pytest.mark.parametrize("mode, options", DRAFTERS)
def test_every_drafter_gives_plain_segments_with_chunk_length(main_pair, other_pair, chunk_audio, plain_chunked,
                                                              mode, options):
    options = dict(options)
    if options.pop("assistant_is_other", False):
        options["assistant_model"] = other_pair
    result = SpeculativeWhisper(main_pair, mode=mode, num_draft_tokens=4, **options).transcribe(
        chunk_audio, chunk_length=CHUNK)
    assert result.window_tokens == plain_chunked.window_tokens
    assert result.segments == plain_chunked.segments and result.text == plain_chunked.text
    assert result.stats.drafted_tokens > 0


@pytest.mark.parametrize("timestamps", [False, True])
def test_chunk_length_cuts_the_chunked_modes_windows(main_pair, chunk_audio, timestamps):
    whisper = SpeculativeWhisper(main_pair, mode="off")
    result = whisper.transcribe(chunk_audio, chunk_length=CHUNK, long_form="chunked", timestamps=timestamps)
    windows = split_long_audio(chunk_audio, max_seconds=CHUNK)
    assert len(windows) >= 3 and len(result.window_tokens) == len(windows)
    if not timestamps:  # 25 s is one 30-s window (with timestamps, short audio is decoded by seeking)
        assert len(whisper.transcribe(chunk_audio, long_form="chunked", timestamps=False).window_tokens) == 1


def test_a_batch_cuts_its_files_at_the_chunk_length_too(main_pair, chunk_audio):
    whisper = SpeculativeWhisper(main_pair, mode="off", chunk_length=CHUNK)  # a transcriber's default
    alone = whisper.transcribe(chunk_audio, long_form="chunked", timestamps=False)
    batched = whisper.transcribe_batch([chunk_audio], batch_size=4)[0]
    assert len(alone.window_tokens) >= 3 and batched.window_tokens == alone.window_tokens
