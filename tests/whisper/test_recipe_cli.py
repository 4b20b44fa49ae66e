"""The recipe from the command line (tiny.en): word timestamps in JSON and as word cues, VAD times on the file's
timeline, a truncated prompt said in one warning line, bad values in one error line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

from asr_specdec.cli.transcribe import main

pytestmark = pytest.mark.slow


def cli(capsys, *args):
    code = main(["--main", "tiny.en", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def paused_file(shared_audio, tmp_path_factory):
    """librivox-0880 ("he was not an ill disposed young man") after 12 s of silence."""
    speech, rate = soundfile.read(shared_audio / "librivox-0880.wav", dtype="float32")
    path = tmp_path_factory.mktemp("recipe_cli") / "paused.wav"
    soundfile.write(path, np.concatenate([np.zeros(12 * rate, np.float32), speech]), rate)
    return path


def test_word_timestamps_in_json_and_as_word_cues(capsys, paused_file):
    code, out, err = cli(capsys, paused_file, "--word-timestamps", "--format", "json")
    assert code == 0, err
    segments = json.loads(out)["segments"]
    words = [word for segment in segments for word in segment["words"]]
    assert {"word", "start", "end", "probability"} <= set(words[0])
    assert 11.5 < segments[0]["start"] == words[0]["start"] < 13 and "young" in "".join(w["word"] for w in words)
    assert {"avg_logprob", "compression_ratio", "no_speech_prob", "temperature"} <= set(segments[0])
    code, out, err = cli(capsys, paused_file, "--format", "srt", "--word-cues", "each")
    assert code == 0, err
    cues = [block for block in out.strip().split("\n\n") if block]
    assert len(cues) == len(words) and cues[0].splitlines()[2] == words[0]["word"].strip()


def test_vad_times_land_on_the_file(capsys, paused_file):
    code, out, err = cli(capsys, paused_file, "--vad", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert 11.5 < record["segments"][0]["start"] < 13 and "young" in record["text"]


def test_hallucination_silence_threshold_from_the_command_line(capsys, paused_file):
    """The option reaches the recipe (it runs, words on, and keeps the speech): tests/whisper/test_hallucination*.py
    show what it drops."""
    code, out, _ = cli(capsys, paused_file, "--word-timestamps", "--hallucination-silence-threshold", "2",
                       "--format", "json")
    assert code == 0 and "young man" in json.loads(out)["text"]


def test_beam_search_from_the_command_line(capsys, shared_audio):
    clip = shared_audio / "librivox-0880.wav"
    code, out, err = cli(capsys, clip, "--beam-size", "3", "--patience", "2", "--length-penalty", "0.5", "--stats")
    assert code == 0 and "young man" in out.lower() and "beam steps" in err


def test_a_long_prompt_is_cut_with_one_warning_line(capsys, paused_file):
    code, out, err = cli(capsys, paused_file, "--initial-prompt", "It was a quiet evening in the village. " * 40)
    assert code == 0 and out.strip()
    warnings = [line for line in err.splitlines() if line.startswith("warning")]
    assert len(warnings) == 1 and "only its last 223 tokens" in warnings[0] and "Traceback" not in err


@pytest.mark.parametrize("arguments, message", [
    (["--no-speech-threshold", "2"], "--no-speech-threshold must be in [0, 1]"),
    (["--best-of", "0"], "--best-of must be a whole number from 1 to 16"),
    (["--vad-threshold", "1.5"], "VAD --vad-threshold must be between 0 and 1"),
    (["--beam-size", "0"], "--beam-size must be a positive integer"),
    (["--patience", "2"], "give --beam-size too"),
    (["--beam-size", "3", "--length-penalty", "1.5"], "--length-penalty must be between 0 and 1"),
    (["--beam-size", "3", "--do-sample"], "cannot be combined with --do-sample"),
    (["--repetition-penalty", "0"], "--repetition-penalty must be a number > 0"),
    (["--no-repeat-ngram-size", "-2"], "--no-repeat-ngram-size must be an integer >= 0"),
    (["--chunk-length", "0"], "--chunk-length must be a whole number of seconds from 1 to 30, not 0"),
    (["--chunk-length", "31"], "--chunk-length must be a whole number of seconds from 1 to 30, not 31"),
    (["--chunk-length", "x"], "--chunk-length must be a whole number of seconds from 1 to 30, not 'x'"),
    (["--vad-min-silence-ms", "-1"], "VAD --vad-min-silence-ms must not be negative"),
    (["--vad", "--batch-size", "4"], "--vad cannot be applied to a batch"),
    (["--hallucination-silence-threshold", "2"], "--hallucination-silence-threshold needs word timestamps: set "
                                                 "--word-timestamps"),
    (["--hallucination-silence-threshold", "2", "--word-timestamps", "--vad"],
     "applies to sequential decoding only: not with --vad"),
])
def test_bad_values_are_one_line_errors(capsys, paused_file, arguments, message):
    code, _, err = cli(capsys, paused_file, *arguments)
    errors = [line for line in err.strip().splitlines() if line.startswith("error")]
    assert code == 2 and len(errors) == 1 and message in errors[0] and "Traceback" not in err
