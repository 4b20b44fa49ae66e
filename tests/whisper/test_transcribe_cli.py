"""The transcribe CLI with real weights: valid odd inputs give correct transcripts, bad inputs a one-line
error and a non-zero exit, never a traceback; one bad file among several does not lose the others."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from asr_specdec.cli.transcribe import main

pytestmark = pytest.mark.slow


def cli(capsys, *args):
    code = main(["--main", "tiny.en", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_line_error(err: str) -> str:
    lines = [line for line in err.strip().splitlines() if line.startswith("error")]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture(scope="module")
def speech(shared_audio):
    samples, rate = soundfile.read(shared_audio / "librivox-0880.wav", dtype="float32")
    assert rate == 16000
    return samples  # "he was not an ill disposed young man"


def test_transcribes_a_sample_and_writes_json(capsys, tmp_path, shared_audio):
    out = tmp_path / "out.json"
    code, _, err = cli(capsys, shared_audio / "LJ002-0020.wav", "--format", "json", "--output", out, "--stats")
    assert code == 0, err
    record = json.loads(out.read_text())
    assert "1813" in record["text"]
    assert record["stats"]["new_tokens"] == len(record["tokens"]) > 0
    assert record["main_model"] == "tiny.en" and record["segments"][0]["start"] == 0.0
    assert "acceptance" in err or "accepted" in err


@pytest.mark.parametrize("compute_type", ["int8", "bfloat16:float32"])
def test_the_default_mode_says_which_drafter_the_loaded_model_got_and_why(capsys, shared_audio, compute_type):
    """No --mode: the transcriber decides with the model loaded (an int8 decoder's own int8 copy would draft no
    cheaper, so an int8 decoder gets none; a wider one gets its int8 copy), and --stats names the mode and why; the
    JSON record carries the same mode."""
    from asr_specdec.native import capabilities

    if capabilities().isa == "none":
        pytest.skip("no native kernels: no int8 decoder here")
    code, out, err = cli(capsys, shared_audio / "LJ002-0020.wav", "--compute-type", compute_type, "--format", "json",
                         "--stats")
    assert code == 0, err
    int8_decoder = compute_type == "int8"
    mode = "off" if int8_decoder else "quantized-self"
    assert json.loads(out)["mode"] == mode
    models_line = next(line for line in err.splitlines() if line.startswith("models:"))
    assert f"mode {mode} (" in models_line and ("no cheaper" in models_line) == int8_decoder


@pytest.fixture(scope="module")
def speech_heard(speech):
    """What tiny.en hears in the clip at 16 kHz mono (it mishears 'ill disposed' as 'old-sposed')."""
    from asr_specdec.whisper import SpeculativeWhisper

    return SpeculativeWhisper("tiny.en", mode="off").transcribe(0.75 * speech).text


@pytest.mark.parametrize("rate", [8000, 48000])
def test_odd_sample_rates_and_stereo(capsys, tmp_path, speech, speech_heard, rate):
    import librosa

    resampled = librosa.resample(speech, orig_sr=16000, target_sr=rate)
    stereo = np.stack([resampled, 0.5 * resampled], axis=1)
    path = tmp_path / f"speech_{rate}.wav"
    soundfile.write(path, stereo, rate)
    code, out, err = cli(capsys, path)
    assert code == 0, err
    if rate > 16000:  # resampling down from above 16 kHz loses nothing Whisper hears: the same text
        assert out.strip() == speech_heard.strip()  # the text keeps Whisper's leading space; the CLI prints none
    else:  # 8 kHz has lost everything above 4 kHz; the words must survive
        assert out.lower().startswith("he was not an") and "young man" in out.lower()


def test_silence_gives_a_valid_empty_or_short_transcript(capsys, tmp_path):
    path = tmp_path / "silence.wav"
    soundfile.write(path, np.zeros(16000 * 3, dtype=np.float32), 16000)
    code, out, err = cli(capsys, path)
    assert code == 0, err
    assert len(out.strip()) < 40


def test_ten_minute_file_is_transcribed_whole(capsys, tmp_path, speech):
    gap = np.zeros(16000, dtype=np.float32)
    unit = np.concatenate([speech, gap])
    repeats = int(600 / (len(unit) / 16000)) + 1
    path = tmp_path / "long.flac"
    soundfile.write(path, np.tile(unit, repeats)[: 600 * 16000], 16000)
    out_path = tmp_path / "long.srt"
    code, _, err = cli(capsys, path, "--format", "srt", "--output", out_path)
    assert code == 0, err
    srt = out_path.read_text()
    assert srt.count(" --> ") >= 20  # one segment per window at least: nothing cut at 30 s
    assert "00:09:" in srt  # the last windows are there
    assert srt.lower().count("young man") >= 100


BAD_INPUTS = {
    "missing": lambda tmp: tmp / "nope.wav",
    "directory": lambda tmp: tmp,
    "empty": lambda tmp: _write(tmp / "empty.wav", b""),
    "text as wav": lambda tmp: _write(tmp / "notes.wav", b"this is not audio at all\n" * 20),
    "zero-length": lambda tmp: _zero_length(tmp / "zero.wav"),
    "truncated flac": lambda tmp: _truncated_flac(tmp / "cut.flac"),
}


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def _zero_length(path):
    soundfile.write(path, np.zeros(0, dtype=np.float32), 16000)
    return path


def _truncated_flac(path):
    rng = np.random.default_rng(0)
    soundfile.write(path, rng.standard_normal(16000 * 5).astype(np.float32) * 0.1, 16000)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    return path


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_is_one_line_error_and_nonzero_exit(capsys, tmp_path, case):
    path = BAD_INPUTS[case](tmp_path)
    code, out, err = cli(capsys, path)
    if case == "truncated flac" and code == 0:
        pytest.fail("a truncated flac must be reported, not silently transcribed")
    assert code != 0
    assert str(path.name) in one_line_error(err)


@pytest.mark.parametrize("batch", [[], ["--batch-size", "3"]])
def test_several_files_with_one_bad(capsys, tmp_path, shared_audio, batch):
    bad = _write(tmp_path / "bad.wav", b"garbage")
    outdir = tmp_path / "out"
    code, _, err = cli(capsys, shared_audio / "LJ002-0020.wav", bad, shared_audio / "goforward.wav",
                       "--output", outdir, *batch)
    assert code == 1
    assert "bad.wav" in one_line_error(err)
    assert "1813" in (outdir / "LJ002-0020.txt").read_text()
    assert "forward" in (outdir / "goforward.txt").read_text().lower()
    assert not (outdir / "bad.txt").exists()


def test_batched_files_get_the_tokens_they_get_alone(capsys, tmp_path, shared_audio):
    files = [shared_audio / name for name in ("LJ002-0035.wav", "librivox-0880.wav", "forever.wav")]
    records = {}
    for batch in ([], ["--batch-size", "2"]):
        code, out, err = cli(capsys, *files, "--format", "json", "--mode", "quantized-self", *batch)
        assert code == 0, err
        records[bool(batch)] = [record["tokens"] for record in json.loads(out)]
    assert records[True] == records[False]


def test_a_batch_honours_timestamps_as_each_file_alone(capsys, shared_audio):
    files = [shared_audio / "forever.wav", shared_audio / "goforward.wav"]
    outputs = {}
    for batch in ([], ["--batch-size", "2"]):
        code, out, err = cli(capsys, *files, "--format", "srt", *batch)
        assert code == 0, err
        outputs[bool(batch)] = out
    assert outputs[True] == outputs[False] and "-->" in outputs[True]


def test_unknown_model_name(capsys, shared_audio):
    code = main(["--main", "whisper-nonexistent-xyz", str(shared_audio / "goforward.wav")])
    err = capsys.readouterr().err
    assert code == 2
    assert "whisper-nonexistent-xyz" in one_line_error(err)


def test_mode_needing_an_assistant_without_one(capsys, shared_audio):
    code, _, err = cli(capsys, shared_audio / "goforward.wav", "--mode", "universal")
    assert code == 2
    assert "assistant" in one_line_error(err)


def test_compare_prints_speedup_and_identity(capsys, shared_audio):
    code, out, err = cli(capsys, shared_audio / "forever.wav", "--mode", "quantized-self", "--compare")
    assert code == 0, err
    assert "forever" in out.lower()
    assert "identical output: yes" in err and "speedup" in err


def test_compare_goes_into_the_json(capsys, shared_audio):
    code, out, err = cli(capsys, shared_audio / "forever.wav", "--mode", "quantized-self", "--compare",
                         "--format", "json", "--compute-type", "int8")
    assert code == 0, err
    record = json.loads(out)
    comparison = record["comparison"]
    assert comparison["identical"] is True and comparison["mode"] == "quantized-self"
    assert comparison["speedup"] == pytest.approx(comparison["plain_seconds"] / comparison["speculative_seconds"],
                                                  rel=0.01)
    assert record["compute_type"] == "int8"


@pytest.mark.parametrize("compute_type, message", [("float16", "float16 needs a CUDA GPU"),
                                                   ("fp8", "unknown compute type")])
def test_bad_compute_type_is_one_line_error(capsys, shared_audio, compute_type, message):
    code, _, err = cli(capsys, shared_audio / "forever.wav", "--compute-type", compute_type)
    assert code == 2
    assert message in one_line_error(err)


def test_real_process_exit_code_and_no_traceback(tmp_path):
    process = subprocess.run([sys.executable, "-m", "asr_specdec.transcribe", str(tmp_path / "missing.wav")],
                             capture_output=True, text=True, timeout=300)
    assert process.returncode != 0
    assert "Traceback" not in process.stderr
    assert process.stderr.strip().splitlines()[-1].startswith("error")
