"""Speaker labels survive every output: plain text, SRT and WebVTT (segment, word and highlighted cues), the JSON
record, the server's verbose_json, the drop-in's segments and words, and the web app's segments view and
downloads."""

from __future__ import annotations

import json

import pytest

from asr_specdec.core.stats import DecodeStats
from asr_specdec.whisper.io.formats import Segment, to_srt, to_text, to_vtt
from asr_specdec.whisper.io.records import result_record
from asr_specdec.whisper.recipe.words import Word
from asr_specdec.whisper.result import TranscriptionResult
from asr_specdec.whisper.speakers.turns import Turn

SEGMENTS = [
    Segment(0.0, 1.0, " Hello there.", words=(Word(" Hello", 0.0, 0.4, 0.9, speaker="SPEAKER_00"),
                                              Word(" there.", 0.5, 1.0, 0.8, speaker="SPEAKER_00")),
            speaker="SPEAKER_00"),
    Segment(1.2, 2.0, " Hi.", words=(Word(" Hi.", 1.2, 2.0, 0.9, speaker="SPEAKER_01"),), speaker="SPEAKER_01"),
    Segment(2.1, 3.0, " Bye.", words=(Word(" Bye.", 2.1, 3.0, 0.9, speaker="SPEAKER_01"),), speaker="SPEAKER_01"),
]
RESULT = TranscriptionResult(text=" Hello there. Hi. Bye.", segments=SEGMENTS, window_tokens=[[1, 2]],
                             stats=DecodeStats(), language="en", duration=3.0, mode="off", main_model="tiny.en",
                             turns=[Turn(0.0, 1.0, "SPEAKER_00"), Turn(1.2, 3.0, "SPEAKER_01")])


def test_plain_text_starts_a_labelled_line_at_each_change_of_speaker():
    assert to_text(SEGMENTS) == "[SPEAKER_00] Hello there.\n[SPEAKER_01] Hi. Bye."
    assert to_text([Segment(0, 1, " a"), Segment(1, 2, " b")]) == "a b"  # without speakers: as before


def test_srt_cues_begin_with_the_speaker():
    assert to_srt(SEGMENTS).split("\n\n")[1] == "2\n00:00:01,200 --> 00:00:02,000\n[SPEAKER_01] Hi."
    words = to_srt(SEGMENTS, "each").split("\n\n")
    assert words[1] == "2\n00:00:00,500 --> 00:00:01,000\n[SPEAKER_00] there."
    assert to_srt(SEGMENTS, "highlight").split("\n\n")[0].endswith("[SPEAKER_00] <u>Hello</u> there.")


@pytest.mark.parametrize("cues", ["segment", "each", "highlight"])
def test_vtt_cues_are_voice_spans(cues):
    text = to_vtt(SEGMENTS, cues)
    blocks = text.split("\n\n")[1:]
    assert blocks and all(block.splitlines()[1].startswith(("<v SPEAKER_00>", "<v SPEAKER_01>")) for block in blocks)
    assert text.count("<v SPEAKER_01>") == 2


def test_json_has_each_segment_s_and_word_s_speaker_and_the_turns():
    record = result_record(RESULT, "talk.wav")
    assert [segment["speaker"] for segment in record["segments"]] == ["SPEAKER_00", "SPEAKER_01", "SPEAKER_01"]
    assert record["segments"][0]["words"][1]["speaker"] == "SPEAKER_00"
    assert record["turns"] == [{"start": 0.0, "end": 1.0, "speaker": "SPEAKER_00"},
                               {"start": 1.2, "end": 3.0, "speaker": "SPEAKER_01"}]
    plain = result_record(TranscriptionResult(" a", [Segment(0, 1, " a")], [[1]], DecodeStats(), "en", 1.0, "off",
                                              "tiny.en"), "a.wav")
    assert "turns" not in plain and "speaker" not in plain["segments"][0]


def test_server_verbose_json_has_the_speakers():
    from asr_specdec.server.forms import AudioRequest
    from asr_specdec.server.responses import verbose

    request = AudioRequest(b"x", "talk.wav", "whisper-1", "transcribe", response_format="verbose_json",
                           granularities=("word", "segment"), diarize=True)
    body = verbose(RESULT, request, {})
    assert [segment["speaker"] for segment in body["segments"]] == ["SPEAKER_00", "SPEAKER_01", "SPEAKER_01"]
    assert [word["speaker"] for word in body["words"]] == ["SPEAKER_00", "SPEAKER_00", "SPEAKER_01", "SPEAKER_01"]


def test_the_drop_in_s_segments_and_words_have_the_speakers():
    from asr_specdec.compat.model import _segment

    segment = _segment(2, SEGMENTS[1], 10.0)
    assert segment.speaker == "SPEAKER_01" and segment.words[0].speaker == "SPEAKER_01" and segment.start == 11.2


def test_the_web_app_colours_segments_by_speaker_and_its_downloads_keep_the_labels(tmp_path):
    from app.downloads import write_downloads
    from app.segments import segments_html

    html = segments_html(SEGMENTS, "file-audio")
    assert html.count('class="segment speaker-0"') == 1 and html.count('class="segment speaker-1"') == 2
    assert html.count('<span class="speaker">SPEAKER_01</span>') == 2
    files = {path.suffix: path.read_text() for path in write_downloads(RESULT, tmp_path, "talk")}
    assert files[".txt"].startswith("[SPEAKER_00] Hello there.")
    assert "[SPEAKER_01] Hi." in files[".srt"] and "<v SPEAKER_01>Hi." in files[".vtt"]
    assert json.loads(files[".json"])["segments"][2]["speaker"] == "SPEAKER_01"
