"""`transcribe --live` with real weights (tiny.en): a file played faster than real time prints its committed text,
or one JSON object per update with the telemetry; misuse is one line and exit code 2."""

from __future__ import annotations

import json

import pytest

from asr_specdec.cli.transcribe import main
from eval.metrics import normalize

pytestmark = pytest.mark.slow


def cli(capsys, *args):
    code = main(["--main", "tiny.en", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def offline(capsys, clip) -> str:
    code, out, err = cli(capsys, clip)
    assert code == 0, err
    return normalize(out)


def test_live_jsonl_with_compare(capsys, shared_audio):
    # "he might even have been made amiable himself", 3.3 s: no near-tie word (librivox-0880 has one, "ill-disposed"
    # or "old-sposed", which tiny.en's offline and live decodes settle differently at some compute types)
    clip = shared_audio / "librivox-0930.wav"
    code, out, err = cli(capsys, clip, "--live", "--live-speed", "8", "--format", "jsonl", "--compare")
    assert code == 0, err
    updates = [json.loads(line) for line in out.splitlines()]
    assert len(updates) >= 2 and updates[-1]["final"] and not any(u["final"] for u in updates[:-1])
    decoded = [update for update in updates if "stats" in update]
    assert decoded and all(update["identical"] for update in decoded)
    for update in decoded:
        assert update["decode_seconds"] > 0 and update["plain_decode_seconds"] > 0
        assert {"audio_seconds", "committed", "tentative", "lag_seconds", "drafting"} <= update.keys()
    assert [update["audio_seconds"] for update in updates] == sorted(update["audio_seconds"] for update in updates)
    assert normalize(updates[-1]["committed"]) == offline(capsys, clip)
    assert "speedup median" in err and "identical output: yes" in err


def test_live_text_prints_the_transcript(capsys, shared_audio):
    clip = shared_audio / "goforward.wav"
    code, out, err = cli(capsys, clip, "--live", "--live-speed", "8")
    assert code == 0, err
    assert normalize(out) == offline(capsys, clip)


@pytest.mark.parametrize("extra, problem", [
    (["--format", "srt"], "--live prints text or jsonl"),
    (["--live-speed", "0"], "--live-speed must be a positive number"),
    (["--output", "x.txt"], "redirect it"),
])
def test_live_misuse_is_one_line(capsys, shared_audio, extra, problem):
    code, out, err = cli(capsys, shared_audio / "goforward.wav", "--live", *extra)
    assert code == 2 and problem in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_live_missing_file_is_one_line_and_nonzero(capsys, tmp_path):
    code, out, err = cli(capsys, tmp_path / "missing.wav", "--live")
    assert code == 1 and "no such file" in err and "Traceback" not in err
