"""app/views.py: telemetry and comparison rows, tables, the summary line, token highlights."""

from __future__ import annotations

import pytest

from app.views import (
    COMPARISON_MEASURES,
    FROM_DRAFT,
    FROM_MAIN,
    comparison_rows,
    summary_html,
    table_html,
    telemetry_rows,
    token_highlights,
)
from asr_specdec.core.stats import DecodeStats
from asr_specdec.whisper import SpeedComparison, TranscriptionResult
from asr_specdec.whisper.io.formats import Segment

from .html_tables import table_rows

END = 99


class ByteTokenizer:
    """Token i is byte i (so a UTF-8 character can span tokens); END is special and has no text."""

    def decode(self, tokens, skip_special_tokens=True):
        return bytes(t for t in tokens if t != END).decode("utf-8", errors="replace")


def result(tokens, from_draft, seconds=2.0, mode="quantized-self", segments=None, language="en"):
    stats = DecodeStats(new_tokens=len(tokens), drafted_tokens=6, accepted_tokens=3, main_passes=2,
                        total_seconds=seconds, token_from_draft=list(from_draft))
    return TranscriptionResult(text="hi", segments=segments or [Segment(0.0, 1.5, "hi")], window_tokens=[tokens],
                               stats=stats, language=language, duration=4.0, mode=mode, main_model="tiny.en")


def test_highlights_label_each_token_by_who_supplied_it_and_drop_special_tokens():
    tokens = [ord("h"), ord("i"), ord("!"), END]
    pieces = token_highlights(result(tokens, [True, False, True, False]), ByteTokenizer())
    assert pieces == [("h", FROM_DRAFT), ("i", FROM_MAIN), ("!", FROM_DRAFT)]


def test_a_character_split_across_tokens_is_shown_once_and_is_from_the_draft_only_if_all_its_bytes_are():
    e_acute = list("é".encode())  # two bytes, two tokens
    pieces = token_highlights(result([ord("a"), *e_acute, END], [True, True, False, True]), ByteTokenizer())
    assert pieces == [("a", FROM_DRAFT), ("é", FROM_MAIN)]


def test_telemetry_rows():
    rows = dict(telemetry_rows(result([1, 2, 3, 4], [True] * 4, language="de")))
    assert rows["language"] == "German"
    assert rows["acceptance rate"] == "50%"
    assert rows["drafted / accepted"] == "6 / 3"
    assert rows["tokens per main pass"] == "2.00"
    assert rows["time"] == "2.00 s"
    assert rows["speed"] == "2.0 tokens/s, 2.0x real time"


@pytest.mark.parametrize("speculative_tokens, identical", [([1, 2, 3], "yes"), ([1, 2, 4], "NO")])
def test_comparison_rows(speculative_tokens, identical):
    # the results' own times are a run's; the table shows the comparison's medians
    plain = result([1, 2, 3], [False] * 3, seconds=9.0, mode="off")
    speculative = result(speculative_tokens, [True] * 3, seconds=9.0)
    rows = {row[0]: row[1:] for row in comparison_rows(SpeedComparison(plain, speculative, 3.0, 1.5, 3))}
    assert rows["speedup"] == ["1.00x", "2.00x"]
    assert rows["identical output"] == ["", identical]
    assert rows["time"] == ["3.00 s", "1.50 s"]
    assert list(rows) == COMPARISON_MEASURES  # the empty table shown before a comparison has the same rows


def test_tables_escape_their_cells():
    html = table_html(["measure", "value"], [["models", "<script>x</script> & y"]])
    assert table_rows(html) == [["measure", "value"], ["models", "<script>x</script> & y"]]
    assert "<script>" not in html


def test_summary_names_the_language_and_how_it_was_known_and_carries_a_note():
    html = summary_html(result([1], [True], language="fr"), "detected", note="switched <drafter>")
    assert '<strong class="language">French</strong> (detected)' in html
    assert "4.0 s of audio" in html and "50% of drafted tokens accepted" in html
    assert '<p class="note">switched &lt;drafter&gt;</p>' in html
    assert "drafter off" in summary_html(result([1], [False], mode="off"), "chosen")
