import dataclasses

import pytest

from asr_specdec.whisper.io.formats import Segment, to_srt, to_text, to_vtt

SEGMENTS = [
    Segment(0.0, 1.5, " Hello world."),
    Segment(1.5, 3661.25, "This is a test.  "),
]


def test_segment_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        SEGMENTS[0].text = "changed"


def test_srt():
    assert to_srt(SEGMENTS) == (
        "1\n00:00:00,000 --> 00:00:01,500\nHello world.\n"
        "\n"
        "2\n00:00:01,500 --> 01:01:01,250\nThis is a test.\n"
    )


def test_vtt():
    assert to_vtt(SEGMENTS) == (
        "WEBVTT\n"
        "\n"
        "00:00:00.000 --> 00:00:01.500\nHello world.\n"
        "\n"
        "00:00:01.500 --> 01:01:01.250\nThis is a test.\n"
    )


def test_text():
    assert to_text(SEGMENTS) == "Hello world. This is a test."


def test_no_segments():
    assert to_srt([]) == ""
    assert to_vtt([]) == "WEBVTT\n"
    assert to_text([]) == ""


def test_empty_segments_left_out_and_numbering_stays_continuous():
    segments = [Segment(0.0, 1.0, "  "), Segment(1.0, 2.0, "One."), Segment(2.0, 3.0, ""),
                Segment(3.0, 4.0, "Two.")]
    srt = to_srt(segments)
    assert srt.startswith("1\n00:00:01,000 --> 00:00:02,000\nOne.\n\n2\n00:00:03,000")
    assert "3\n" not in srt
    assert to_vtt(segments).count("-->") == 2
    assert to_text(segments) == "One. Two."


def test_blank_lines_inside_text_cannot_end_a_cue():
    srt = to_srt([Segment(0.0, 1.0, "first line\n\n  second line ")])
    assert srt == "1\n00:00:00,000 --> 00:00:01,000\nfirst line\nsecond line\n"
    assert to_text([Segment(0.0, 1.0, "first line\n\nsecond line")]) == "first line second line"


@pytest.mark.parametrize(("seconds", "srt_stamp"), [
    (59.9996, "00:01:00,000"),
    (0.0004, "00:00:00,000"),
    (-0.2, "00:00:00,000"),
    (36000.001, "10:00:00,001"),
    (3599.999, "00:59:59,999"),
])
def test_timestamp_rounding_and_carry(seconds, srt_stamp):
    srt = to_srt([Segment(seconds, seconds, "x")])
    assert srt.splitlines()[1] == f"{srt_stamp} --> {srt_stamp}"
    assert to_vtt([Segment(seconds, seconds, "x")]).splitlines()[2] == (
        f"{srt_stamp.replace(',', '.')} --> {srt_stamp.replace(',', '.')}")
