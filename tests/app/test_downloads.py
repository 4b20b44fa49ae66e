"""app/downloads.py: every format at once, named after the upload or the time of a recording."""

from __future__ import annotations

import json
import os
from datetime import datetime

from app.downloads import download_stem, write_comparison, write_downloads
from asr_specdec.whisper.io.formats import Segment

from .test_views import result


def test_an_upload_keeps_its_name_and_a_recording_is_named_by_when_it_was_made(tmp_path):
    recording = tmp_path / "audio.wav"
    recording.write_bytes(b"")
    os.utime(recording, (0, datetime(2024, 5, 6, 7, 8, 9).timestamp()))
    assert download_stem(str(tmp_path / "talk.final.mp3"), recorded=False) == "talk.final"
    assert download_stem(str(recording), recorded=True) == "recording-2024-05-06-070809"


def test_every_format_is_written(tmp_path):
    segments = [Segment(0.0, 1.5, "hello"), Segment(1.5, 2.0, "there")]
    paths = write_downloads(result([1], [True], segments=segments), tmp_path, "clip")
    files = {path.name: path.read_text() for path in paths}
    assert files["clip.txt"] == "hello there\n"
    assert files["clip.srt"] == "1\n00:00:00,000 --> 00:00:01,500\nhello\n\n2\n00:00:01,500 --> 00:00:02,000\nthere\n"
    assert files["clip.vtt"].startswith("WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nhello\n")
    record = json.loads(files["clip.json"])
    assert [segment["text"] for segment in record["segments"]] == ["hello", "there"]
    assert record["segments"][1] == {"start": 1.5, "end": 2.0, "text": "there"}
    assert record["language"] == "en" and record["stats"]["accepted_tokens"] == 3


def test_two_downloads_of_the_same_name_do_not_overwrite_each_other(tmp_path):
    first = write_downloads(result([1], [True]), tmp_path, "clip")
    second = write_downloads(result([1], [True]), tmp_path, "clip")
    assert first[0] != second[0] and all(path.exists() for path in first + second)


def test_a_comparison_downloads_the_transcript_and_both_results(tmp_path):
    plain, speculative = result([1, 2], [False] * 2, mode="off"), result([1, 2], [True] * 2)
    paths = write_comparison(plain, speculative, [["speedup", "1.00x", "1.50x"]], tmp_path, "clip")
    assert [path.name for path in paths] == ["clip.txt", "clip.srt", "clip.vtt", "clip.json", "clip.comparison.json"]
    report = json.loads(paths[-1].read_text())
    assert report["comparison"] == {"speedup": ["1.00x", "1.50x"]}
    assert (report["plain"]["mode"], report["speculative"]["mode"]) == ("off", "quantized-self")
