"""app/views.py: telemetry and comparison rows, token highlights, transcript downloads."""

from __future__ import annotations

import pytest

from app.views import (
    FROM_DRAFT,
    FROM_MAIN,
    comparison_rows,
    telemetry_rows,
    token_highlights,
    write_transcript,
)
from asr_specdec.core.stats import DecodeStats
from asr_specdec.whisper import TranscriptionResult
from asr_specdec.whisper.formats import Segment

END = 99


class ByteTokenizer:
    """Token i is byte i (so a UTF-8 character can span tokens); END is special and has no text."""

    def decode(self, tokens, skip_special_tokens=True):
        return bytes(t for t in tokens if t != END).decode("utf-8", errors="replace")


def result(tokens, from_draft, seconds=2.0, mode="quantized-self", segments=None):
    stats = DecodeStats(new_tokens=len(tokens), drafted_tokens=6, accepted_tokens=3, main_passes=2,
                        total_seconds=seconds, token_from_draft=list(from_draft))
    return TranscriptionResult(text="hi", segments=segments or [Segment(0.0, 1.5, "hi")], window_tokens=[tokens],
                               stats=stats, language="en", duration=4.0, mode=mode, main_model="tiny.en")


def test_highlights_label_each_token_by_who_supplied_it_and_drop_special_tokens():
    tokens = [ord("h"), ord("i"), ord("!"), END]
    pieces = token_highlights(result(tokens, [True, False, True, False]), ByteTokenizer())
    assert pieces == [("h", FROM_DRAFT), ("i", FROM_MAIN), ("!", FROM_DRAFT)]


def test_a_character_split_across_tokens_is_shown_once_and_is_from_the_draft_only_if_all_its_bytes_are():
    e_acute = list("é".encode())  # two bytes, two tokens
    pieces = token_highlights(result([ord("a"), *e_acute, END], [True, True, False, True]), ByteTokenizer())
    assert pieces == [("a", FROM_DRAFT), ("é", FROM_MAIN)]


def test_telemetry_rows():
    rows = dict(telemetry_rows(result([1, 2, 3, 4], [True] * 4)))
    assert rows["acceptance rate"] == "50%"
    assert rows["drafted / accepted"] == "6 / 3"
    assert rows["tokens per main pass"] == "2.00"
    assert rows["time"] == "2.00 s"
    assert rows["speed"] == "2.0 tokens/s, 2.0x real time"


@pytest.mark.parametrize("speculative_tokens, identical", [([1, 2, 3], "yes"), ([1, 2, 4], "NO")])
def test_comparison_rows(speculative_tokens, identical):
    plain = result([1, 2, 3], [False] * 3, seconds=3.0, mode="off")
    speculative = result(speculative_tokens, [True] * 3, seconds=1.5)
    rows = {row[0]: row[1:] for row in comparison_rows(plain, speculative)}
    assert rows["speedup"] == ["1.00x", "2.00x"]
    assert rows["identical output"] == ["", identical]
    assert rows["time"] == ["3.00 s", "1.50 s"]


@pytest.mark.parametrize("output_format, name, expected", [
    ("text", "clip.txt", "hello there\n"),
    ("srt", "clip.srt", "1\n00:00:00,000 --> 00:00:01,500\nhello\n\n2\n00:00:01,500 --> 00:00:02,000\nthere\n"),
    ("vtt", "clip.vtt", "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nhello\n\n00:00:01.500 --> 00:00:02.000\nthere\n"),
])
def test_downloads_in_each_format(tmp_path, output_format, name, expected):
    segments = [Segment(0.0, 1.5, "hello"), Segment(1.5, 2.0, "there")]
    path = write_transcript(result([1], [True], segments=segments), output_format, tmp_path, "clip")
    assert path.name == name and path.read_text() == expected


def test_two_downloads_of_the_same_name_do_not_overwrite_each_other(tmp_path):
    first = write_transcript(result([1], [True]), "text", tmp_path, "clip")
    second = write_transcript(result([1], [True]), "text", tmp_path, "clip")
    assert first != second and first.exists() and second.exists()
