"""Sequential long-form decoding: segment splitting and seeking against transformers' own long-form code, the
window loop on a scripted decoder, and the whole loop on tiny random models against transformers' generate."""

from __future__ import annotations

import random

import pytest
import torch
from transformers.models.whisper.generation_whisper import WhisperGenerationMixin, _pad_to_max_length

from asr_specdec.whisper.longform.sequential import (
    Frames,
    TimedTokens,
    WindowOutcome,
    batched_segments,
    chunk_segments,
    previous_tokens,
    seek_text_tokens,
    transcribe_sequential,
    window_segments,
)

from ..tiny_longform import FRAMES, TIMESTAMP_BEGIN, long_features, timestamp_whisper, window_decoder
from ..tiny_whisper import EOS

FULL = Frames()  # Whisper's: 3000 frames per window, 2 frames per timestamp, 10 ms per frame
TB, EOT = 50364, 50257  # base's <|0.00|> and end-of-text


def ts(seconds: float) -> int:
    return TB + round(seconds / 0.02)


def transformers_segments(tokens: list[int], offset_frames: int, window_frames: int):
    """transformers' `_retrieve_segment` on the same window (it gets the tokens without end-of-text)."""
    if tokens and tokens[-1] == EOT:
        tokens = tokens[:-1]
    segments, advance = WhisperGenerationMixin._retrieve_segment(
        seek_sequence=torch.tensor(tokens, dtype=torch.long), seek_outputs=[{}],
        time_offset=torch.tensor([offset_frames * 0.01], dtype=torch.float64), timestamp_begin=TB,
        seek_num_frames=torch.tensor([window_frames]), time_precision=0.02, time_precision_features=0.01,
        input_stride=2, prev_idx=0, idx=0, return_token_timestamps=False,
        decoder_input_ids=torch.tensor([[1, 2, 3]]))
    return ([TimedTokens(round(float(s["start"]), 6), round(float(s["end"]), 6), tuple(s["tokens"].tolist()))
             for s in segments], int(advance))


def rounded(segments: list[TimedTokens]) -> list[TimedTokens]:
    return [TimedTokens(round(s.start, 6), round(s.end, 6), s.tokens) for s in segments]


WINDOWS = {
    "ends with a single timestamp": [ts(0), 11, 12, ts(1), ts(1), 13, ts(2.5), EOT],
    "cut after a pair": [ts(0), 11, ts(1), ts(1.2), 12, 13],
    "ends with a pair": [ts(0), 11, ts(1), ts(1.2), EOT],
    "no pair, one closing timestamp": [ts(0.4), 11, 12, ts(3), EOT],
    "no pair, no closing timestamp": [ts(0.4), 11, 12, 13],
    "only <|0.00|>": [ts(0), 11, 12],
    "empty": [],
}


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("offset, window_frames", [(0, 3000), (1234, 3000), (5000, 1800)])
def test_window_segments_equal_transformers(name, offset, window_frames):
    tokens = WINDOWS[name]
    segments, advance = window_segments(tokens, TB, EOT, offset, window_frames, FULL)
    assert (rounded(segments), advance) == transformers_segments(tokens, offset, window_frames)


def test_window_segments_by_hand():
    segments, advance = window_segments(WINDOWS["cut after a pair"], TB, EOT, 1000, 3000, FULL)
    assert rounded(segments) == [TimedTokens(10.0, 11.0, (ts(0), 11, ts(1), ts(1.2)))]
    assert advance == 100  # the next window starts at <|1.00|>: the text after the pair may be a cut word
    segments, advance = window_segments(WINDOWS["ends with a single timestamp"], TB, EOT, 0, 3000, FULL)
    assert [(s.start, s.end) for s in segments] == [(0.0, 1.0), (1.0, 2.5)]
    assert advance == 3000  # everything was heard: the next window starts after this one
    segments, advance = window_segments(WINDOWS["only <|0.00|>"], TB, EOT, 0, 1800, FULL)
    assert [(s.start, s.end) for s in segments] == [(0.0, 18.0)] and advance == 1800  # no end: the window's
    # as in both references, a window without a pair starts with the window and ends at its last timestamp
    segments, _ = window_segments(WINDOWS["no pair, one closing timestamp"], TB, EOT, 0, 3000, FULL)
    assert [(s.start, s.end) for s in segments] == [(0.0, 3.0)]


def rule_abiding_window(rng: random.Random, length: int) -> list[int]:
    """Tokens a Whisper model could emit under the timestamp rules (pairs, rising times, text between), cut
    at `length` as the length limit would cut them, ending with end-of-text or not."""
    time = rng.choice([0, 10, 25])
    tokens = [TB + time]
    while len(tokens) < length:
        tokens += [rng.randrange(1000, 2000) for _ in range(rng.randrange(1, 5))]
        time = min(1500, time + rng.randrange(1, 80))
        tokens.append(TB + time)
        if rng.random() < 0.7:
            time = min(1500, time + rng.choice([0, 0, 5]))
            tokens.append(TB + time)
    tokens = tokens[:length]
    return tokens + [EOT] if rng.random() < 0.5 else tokens


@pytest.mark.parametrize("seed", range(20))
def test_random_windows_split_as_transformers_splits_them(seed):
    rng = random.Random(seed)
    tokens = rule_abiding_window(rng, rng.randrange(2, 40))
    offset, frames = rng.randrange(0, 50000), rng.choice([3000, 3000, rng.randrange(100, 3000)])
    segments, advance = window_segments(tokens, TB, EOT, offset, frames, FULL)
    assert (rounded(segments), advance) == transformers_segments(tokens, offset, frames), tokens


def test_conditioning_tokens_equal_transformers():
    rng = random.Random(0)
    segments = []
    for _ in range(6):
        segments += window_segments(rule_abiding_window(rng, 30), TB, EOT, 0, 3000, FULL)[0]
    expected = _pad_to_max_length([[{"tokens": torch.tensor(s.tokens)} for s in segments]], EOT, "cpu",
                                  padding_side="left", skip_ending_double_timestamps=True, timestamp_begin=TB)
    assert previous_tokens(segments, TB) == expected[0].tolist()


def test_chunk_segments_keep_every_piece():
    tokens = [ts(0), 11, ts(1), ts(1.2), 12, 13, EOT]
    pieces = chunk_segments(tokens, TB, EOT, offset=60.0, duration=28.5, frames=FULL)
    assert [(round(p.start, 6), round(p.end, 6), p.tokens) for p in pieces] == [
        (60.0, 61.0, (ts(0), 11, ts(1))), (61.2, 88.5, (ts(1.2), 12, 13))]
    single = chunk_segments([ts(0.5), 11, ts(2), EOT], TB, EOT, 0.0, 10.0, FULL)
    assert [(p.start, p.end) for p in single] == [(0.5, 2.0)]
    past_the_end = chunk_segments([ts(9), 11, ts(12), ts(12), 12, ts(14), EOT], TB, EOT, 30.0, 10.0, FULL)
    assert [(p.start, p.end) for p in past_the_end] == [(39.0, 40.0), (40.0, 40.0)]
    assert chunk_segments([EOT], TB, EOT, 0.0, 10.0, FULL) == []


def test_batched_segments_split_as_faster_whispers_batched_pipeline():
    """faster-whisper's batched split of a window it never decodes again: the unfinished last piece is dropped,
    a window ending on a single timestamp keeps its last piece, one with no pair of timestamps is one segment from
    the window's start to its last timestamp (the window's end without one); times are not clipped."""
    tokens = [ts(0), 11, ts(1), ts(1.2), 12, 13, EOT]
    pieces = batched_segments(tokens, TB, EOT, offset=60.0, duration=28.5, frames=FULL)
    assert [(round(p.start, 6), round(p.end, 6), p.tokens) for p in pieces] == [(60.0, 61.0, (ts(0), 11, ts(1)))]
    ending = batched_segments([ts(0), 11, ts(1), ts(1.2), 12, ts(3), EOT], TB, EOT, 0.0, 10.0, FULL)
    assert [(round(p.start, 6), round(p.end, 6)) for p in ending] == [(0.0, 1.0), (1.2, 3.0)]
    single = batched_segments([ts(0.5), 11, ts(2), EOT], TB, EOT, 5.0, 10.0, FULL)
    assert [(p.start, p.end) for p in single] == [(5.0, 7.0)]  # chunk_segments: (5.5, 7.0)
    assert [(p.start, p.end) for p in batched_segments([11, 12, EOT], TB, EOT, 5.0, 10.0, FULL)] == [(5.0, 15.0)]
    past_the_end = batched_segments([ts(9), 11, ts(12), ts(12), 12, ts(14), EOT], TB, EOT, 30.0, 10.0, FULL)
    assert [(p.start, p.end) for p in past_the_end] == [(39.0, 42.0), (42.0, 44.0)]


class ScriptedDecoder:
    """Answers each window with the next scripted tokens, recording what it was given."""

    def __init__(self, answers: list[list[int]]):
        self.script, self.answers, self.windows, self.previous = answers, list(answers), [], []

    def __call__(self, window: torch.Tensor, previous: list[int] | None) -> list[int]:
        self.windows.append(window.clone())
        self.previous.append(previous)
        return self.answers.pop(0)


def test_sequential_loop_seeks_pads_conditions_and_reports_progress():
    features = torch.arange(1, 7001, dtype=torch.float32).repeat(2, 1)[None]  # 70 s: frame i holds i + 1
    decoder = ScriptedDecoder([
        [ts(0), 11, ts(10), ts(10), 12, ts(25.5), ts(26), 13, 14],  # cut: resume at 25.50 s
        [ts(0), 15, ts(20), EOT],  # heard to the end: resume 30 s later
        [ts(0), 16, 17, EOT],  # the last 14.5 s, no pair
    ])
    calls = []
    output = transcribe_sequential(features, decoder, TB, EOT, FULL, condition_on_previous_text=True,
                                   progress=lambda done, what: calls.append(done))
    assert output.window_offsets == [0.0, 25.5, 55.5]
    assert [(round(s.start, 6), round(s.end, 6)) for s in output.segments] == [
        (0.0, 10.0), (10.0, 25.5), (25.5, 45.5), (55.5, 70.0)]
    assert [window[0, 0, 0].item() for window in decoder.windows] == [1, 2551, 5551]
    last = decoder.windows[-1][0, 0]
    assert last[1449].item() == 7000 and last[1450:].abs().sum() == 0  # zero-padded after the audio's end
    assert decoder.previous[0] is None
    assert decoder.previous[1] == [ts(0), 11, ts(10), ts(10), 12, ts(25.5)]
    assert decoder.previous[2] == decoder.previous[1] + [ts(0), 15, ts(20)]
    assert calls == [0.0, 2550 / 7000, 5550 / 7000]
    assert output.window_tokens == decoder.script


def test_progress_names_the_audio_length_not_the_padded_window():
    described = []
    transcribe_sequential(torch.zeros(1, 2, 3000), ScriptedDecoder([[ts(0), 11, EOT]]), TB, EOT, FULL,
                          progress=lambda done, what: described.append(what), audio_seconds=1.5)
    assert described == ["transcribing from 0.0 s of 1.5 s"]
    described.clear()
    transcribe_sequential(torch.zeros(1, 2, 3000), ScriptedDecoder([[ts(0), 11, EOT]]), TB, EOT, FULL,
                          progress=lambda done, what: described.append(what))
    assert described == ["transcribing from 0.0 s of 30.0 s"]


def test_seek_text_tokens_align_only_a_window_the_next_one_starts_inside():
    cut = [ts(0), 11, 12, ts(10), ts(10), 13, ts(25.5), ts(25.5), EOT]
    assert seek_text_tokens(cut, TB, EOT) == [11, 12, 13]
    assert seek_text_tokens([ts(0), 11, ts(10), ts(10), 13, ts(20), EOT], TB, EOT) == []  # single ending
    assert seek_text_tokens([ts(0), 11, 12, EOT], TB, EOT) == []  # no pair: one segment, heard to the end


def test_last_word_end_moves_the_next_window_back_and_cuts_the_segment_end():
    from asr_specdec.whisper.recipe.alignment import AlignedWord
    from asr_specdec.whisper.recipe.words import place_words

    def word(text, token, start, end):
        return AlignedWord(text, [token], start, end, 0.9)

    script = [[ts(0), 11, ts(10), ts(10), 12, ts(25.5), ts(25.5), EOT], [ts(0), 15, ts(2), EOT]]
    words = [[word(" a", 11, 0.5, 9.0), word(" b", 12, 11.0, 24.8)], []]
    calls = iter(range(2))

    def decode(window, previous):
        number = next(calls)
        return WindowOutcome(script[number], words=words[number])

    seeking = transcribe_sequential(torch.zeros(1, 2, 4000), decode, TB, EOT, FULL, place_words=place_words,
                                    keep_words=False)
    assert seeking.window_offsets == [0.0, 24.8]  # the last word's end, not the closing 25.5
    assert [(round(s.start, 6), round(s.end, 6)) for s in seeking.segments] == [(0.0, 10.0), (10.0, 24.8),
                                                                                  (24.8, 26.8)]
    assert all(not segment.words for segment in seeking.segments)
    calls, words[0][1].end = iter(range(2)), 27.0  # a word end after the closing timestamp: never skip ahead
    later = transcribe_sequential(torch.zeros(1, 2, 4000), decode, TB, EOT, FULL, place_words=place_words,
                                  keep_words=False)
    assert later.window_offsets == [0.0, 25.5]


def test_sequential_loop_without_conditioning_passes_no_previous_text():
    decoder = ScriptedDecoder([[ts(0), 11, ts(5), ts(5), 12], [ts(0), 13, EOT]])
    transcribe_sequential(torch.zeros(1, 2, 3000), decoder, TB, EOT, FULL)
    assert decoder.previous == [None, None]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("condition", [False, True])
def test_tiny_model_equals_transformers_long_form_generate(seed, condition):
    model = timestamp_whisper(seed)
    features = long_features(seed)
    ours = transcribe_sequential(features, window_decoder(model), TIMESTAMP_BEGIN, EOS, FRAMES, condition)
    with torch.inference_mode():
        reference = model.generate(features, return_timestamps=True, return_segments=True,
                                   condition_on_prev_tokens=condition)["segments"][0]
    expected = [TimedTokens(round(float(s["start"]), 6), round(float(s["end"]), 6), tuple(s["tokens"].tolist()))
                for s in reference]
    assert rounded(ours.segments) == expected
    assert len(ours.window_tokens) > 2
