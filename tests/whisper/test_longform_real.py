"""Long-form audio on real weights: the team's clips joined into one file of over a minute, transcribed by
Whisper's sequential timestamped algorithm. Plain equals transformers' own long-form generate; every drafter
(and the universal pair base <- tiny.en, whose timestamp ids differ) equals plain, segment for segment;
subtitles come out well formed."""

from __future__ import annotations

import re

import pytest
import torch

from asr_specdec.weights.whisper_models import load_whisper
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.io.formats import to_srt, to_vtt
from eval.bench.harness import joined_clips

pytestmark = pytest.mark.slow



@pytest.fixture(scope="module")
def long_clip(shared_audio):
    audio = joined_clips(shared_audio)  # the long-audio benchmark's file: every clip, 0.5 s of silence after each
    assert len(audio) / 16000 > 60
    return audio


@pytest.fixture(scope="module")
def tiny_en(tiny_en_dir):
    return load_whisper(str(tiny_en_dir))


@pytest.fixture(scope="module")
def base(base_dir):
    return load_whisper(str(base_dir))


@pytest.fixture(scope="module")
def tiny_plain(tiny_en, long_clip):
    # float32, as transformers' generate() that it is compared with
    return SpeculativeWhisper(tiny_en, mode="off", compute_type="float32").transcribe(long_clip)


def test_tiny_en_plain_equals_transformers_long_form_generate(tiny_en, long_clip):
    # transformers seeks to a window's closing timestamp, as openai's does without word timestamps
    plain = SpeculativeWhisper(tiny_en, mode="off", compute_type="float32", seek_to_words=False).transcribe(long_clip)
    inputs = tiny_en.processor(long_clip, sampling_rate=16000, return_tensors="pt", truncation=False,
                               padding="longest", return_attention_mask=True)
    with torch.inference_mode():
        segments = tiny_en.model.generate(inputs.input_features, attention_mask=inputs.attention_mask,
                                          return_timestamps=True, return_segments=True)["segments"][0]
    def text(tokens) -> str:
        return tiny_en.processor.tokenizer.decode(tokens, skip_special_tokens=True)  # Whisper's leading space kept

    expected = [(round(float(s["start"]), 3), round(float(s["end"]), 3), text(s["tokens"])) for s in segments]
    assert [(s.start, s.end, s.text) for s in plain.segments] == [s for s in expected if s[2].strip()]
    assert len(plain.window_tokens) >= 3 and len(plain.segments) >= 10
    assert "Go forward" in plain.text and plain.text.endswith("Feels like these days go on forever.")


@pytest.mark.parametrize("mode, options", [
    ("quantized-self", {"num_draft_tokens": 6}),
    ("early-exit", {"assistant_early_exit": 2, "dynamic": True}),
    ("prompt-lookup", {}),
    ("assistant", {"assistant_is_main": True}),  # the only same-tokenizer pair installed: tiny.en itself
])
def test_tiny_en_every_drafter_gives_plain_segments(tiny_en, long_clip, tiny_plain, mode, options):
    options = dict(options)
    if options.pop("assistant_is_main", False):
        options["assistant_model"] = tiny_en
    result = SpeculativeWhisper(tiny_en, mode=mode, compute_type="float32", **options).transcribe(long_clip)
    assert result.tokens == tiny_plain.tokens
    assert result.segments == tiny_plain.segments and result.text == tiny_plain.text
    assert result.stats.accepted_tokens > 0


def test_tiny_en_conditioned_on_previous_text(tiny_en, long_clip):
    plain = SpeculativeWhisper(tiny_en, mode="off", condition_on_previous_text=True).transcribe(long_clip)
    speculative = SpeculativeWhisper(tiny_en, mode="quantized-self", condition_on_previous_text=True)
    result = speculative.transcribe(long_clip)
    assert result.tokens == plain.tokens and result.segments == plain.segments
    assert "Go forward" in result.text


def test_base_speculative_and_universal_equal_plain(base, tiny_en, long_clip):
    options = {"language": "en", "condition_on_previous_text": True}
    plain = SpeculativeWhisper(base, mode="off", **options).transcribe(long_clip)
    assert len(plain.segments) >= 10 and "Go forward" in plain.text
    quantized = SpeculativeWhisper(base, mode="quantized-self", **options).transcribe(long_clip)
    assert quantized.tokens == plain.tokens and quantized.segments == plain.segments
    # a fixed draft length: how much the adaptive one drafts depends on this machine's timings, not on the drafter
    universal = SpeculativeWhisper(base, mode="universal", assistant_model=tiny_en, draft_schedule="fixed",
                                   **options).transcribe(long_clip)
    assert universal.tokens == plain.tokens and universal.segments == plain.segments
    # tiny.en drafts the multilingual model's text and timestamps alike
    assert universal.stats.accepted_tokens > universal.stats.new_tokens / 3


def test_base_keeps_the_first_word_of_an_utterance_at_a_seek_point(base, long_clip):
    """Two of base's windows close on a timestamp inside the next clip's first word ("He might even...",
    "Feels like..."): seeking there cut the word and the next window dropped it (faster-whisper, on the same
    weights, loses "Feels" the same way without conditioning). The next window starts at the last word's end."""
    plain = SpeculativeWhisper(base, mode="off", language="en").transcribe(long_clip)
    assert "He might even" in plain.text and "Feels like these days" in plain.text
    quantized = SpeculativeWhisper(base, mode="quantized-self", language="en").transcribe(long_clip)
    assert quantized.tokens == plain.tokens and quantized.segments == plain.segments
    assert quantized.stats.accepted_tokens > 0
    times = [time for segment in plain.segments for time in (segment.start, segment.end)]
    assert times == sorted(times)  # a segment cut where the next window starts never overlaps it


def test_universal_drafter_maps_timestamps_by_name(base, tiny_en):
    from asr_specdec.whisper.drafters import UniversalDrafter

    main_tokenizer, assistant_tokenizer = base.processor.tokenizer, tiny_en.processor.tokenizer
    drafter = UniversalDrafter(tiny_en.model, assistant_tokenizer, main_tokenizer)
    drafter.context = type("Context", (), {"eos_token_id": base.model.generation_config.eos_token_id})()
    ids = main_tokenizer.convert_tokens_to_ids
    main = [ids("<|0.00|>"), *main_tokenizer.encode(" Go forward", add_special_tokens=False), ids("<|1.20|>"),
            ids("<|1.20|>"), *main_tokenizer.encode(" ten", add_special_tokens=False)]
    translated = drafter._to_assistant(main)
    assistant_ids = assistant_tokenizer.convert_tokens_to_ids
    assert translated[0] == assistant_ids("<|0.00|>") == ids("<|0.00|>") - 1
    expected = "<|0.00|> Go forward<|1.20|><|1.20|> ten"
    assert assistant_tokenizer.decode(translated, decode_with_timestamps=True) == expected
    proposed = assistant_tokenizer.encode(" meters.", add_special_tokens=False)
    proposed += [assistant_ids("<|2.40|>"), tiny_en.model.generation_config.eos_token_id]
    back = drafter._to_main(main, proposed)
    assert main_tokenizer.decode(main + back, decode_with_timestamps=True).endswith(
        " ten meters.<|2.40|><|endoftext|>")


def cue_times(cues: list[str], mark: str) -> list[tuple[float, float]]:
    stamp = rf"(\d\d):(\d\d):(\d\d){re.escape(mark)}(\d\d\d)"
    pattern = re.compile(rf"^{stamp} --> {stamp}$")
    times = []
    for cue in cues:
        match = pattern.match(cue)
        assert match, cue
        h1, m1, s1, ms1, h2, m2, s2, ms2 = map(int, match.groups())
        times.append((h1 * 3600 + m1 * 60 + s1 + ms1 / 1000, h2 * 3600 + m2 * 60 + s2 + ms2 / 1000))
    return times


def test_subtitles_are_well_formed_with_increasing_times(tiny_plain):
    srt = to_srt(tiny_plain.segments)
    blocks = srt.strip().split("\n\n")
    assert [int(block.splitlines()[0]) for block in blocks] == list(range(1, len(tiny_plain.segments) + 1))
    assert all(len(block.splitlines()) >= 3 for block in blocks)
    vtt = to_vtt(tiny_plain.segments)
    assert vtt.startswith("WEBVTT\n\n")
    for times in (cue_times([block.splitlines()[1] for block in blocks], ","),
                  cue_times([line for line in vtt.splitlines() if "-->" in line], ".")):
        assert all(start < end for start, end in times)
        flat = [time for pair in times for time in pair]
        assert flat == sorted(flat) and flat[-1] > 60


def test_cli_timestamp_and_long_form_flags(capsys, tmp_path, shared_audio, long_clip):
    import soundfile

    from asr_specdec.cli.transcribe import main

    short = shared_audio / "librivox-0870.wav"  # 7.1 s, one sentence
    assert main(["--main", "tiny.en", "--mode", "off", str(short), "--format", "vtt"]) == 0
    cues = cue_times([line for line in capsys.readouterr().out.splitlines() if "-->" in line], ".")
    assert cues and cues[0][0] < 1.0 and cues[-1][1] < 7.1  # timestamps on for subtitles: real times
    assert main(["--main", "tiny.en", "--mode", "off", str(short), "--format", "vtt", "--no-timestamps"]) == 0
    assert cue_times([line for line in capsys.readouterr().out.splitlines() if "-->" in line], ".") == [(0.0, 7.1)]

    long_path = tmp_path / "long.wav"
    soundfile.write(long_path, long_clip, 16000)
    assert main(["--main", "tiny.en", "--mode", "off", str(long_path), "--format", "srt", "--no-timestamps"]) == 0
    sequential = capsys.readouterr().out  # one cue per 30-s window, each starting where the last one ended
    assert "00:00:00,000 --> 00:00:30,000" in sequential and "00:00:30,000 --> 00:01:00,000" in sequential
    assert main(["--main", "tiny.en", "--mode", "off", str(long_path), "--long-form", "chunked",
                 "--format", "srt", "--no-timestamps"]) == 0
    chunked = capsys.readouterr().out
    assert chunked.count(" --> ") == 3 and "00:00:00,000 --> " in chunked  # one cue per quiet-point window


def test_long_audio_windows_decode_as_rows_of_one_batch(tiny_en, long_clip, shared_audio):
    """The chunked long-form mode for throughput: a long file's quiet-point windows join the batch as rows, next
    to a short file, and each file gets the tokens of its own chunked decoding."""
    from asr_specdec.whisper.io.audio import load_audio

    short = load_audio(shared_audio / "librivox-0870.wav")
    asr = SpeculativeWhisper(tiny_en, mode="quantized-self")
    alone = [asr.transcribe(audio, long_form="chunked", timestamps=False) for audio in (long_clip, short)]
    batched = asr.transcribe_batch([long_clip, short], batch_size=4)
    assert len(alone[0].window_tokens) == 3
    assert [result.window_tokens for result in batched] == [result.window_tokens for result in alone]
    assert [result.text for result in batched] == [result.text for result in alone]
    assert batched[0].stats.accepted_tokens > 0
