"""app/segments.py: one row per spoken segment with its time range, words when the result has them, escaped."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.segments import clock, segments_html
from asr_specdec.whisper.io.formats import Segment

from .html_tables import row_attributes, table_rows


@pytest.mark.parametrize("seconds, shown", [(0, "0:00.0"), (7.26, "0:07.3"), (61.04, "1:01.0"), (59.96, "1:00.0"),
                                            (3725.0, "1:02:05.0")])
def test_clock(seconds, shown):
    assert clock(seconds) == shown


def test_each_spoken_segment_is_a_row_with_its_times_and_where_to_seek():
    html = segments_html([Segment(0.0, 2.5, " Hello there."), Segment(2.5, 3.0, " "),
                          Segment(3.0, 71.24, " <b>Bye</b> & go")], "file-audio")
    assert table_rows(html) == [["time", "text"], ["0:00.0 – 0:02.5", "Hello there."],
                                ["0:03.0 – 1:11.2", "<b>Bye</b> & go"]]
    assert 'data-audio="file-audio"' in html and "<b>" not in html
    assert [attributes.get("data-start") for attributes in row_attributes(html)[1:]] == ["0.000", "3.000"]


def test_words_with_their_own_times_when_the_segment_has_them():
    words = [SimpleNamespace(start=1.0, end=1.4, word=" Hello"), SimpleNamespace(start=1.5, end=2.0, word=" there.")]
    html = segments_html([SimpleNamespace(start=1.0, end=2.0, text=" Hello there.", words=words)], "mic-audio")
    assert table_rows(html)[1] == ["0:01.0 – 0:02.0", "Hello there."]
    assert '<span class="word" data-start="1.500" title="0:01.5 – 0:02.0">there.</span>' in html


def test_no_speech_says_so():
    assert "No speech" in segments_html([Segment(0.0, 1.0, "")], "file-audio")
