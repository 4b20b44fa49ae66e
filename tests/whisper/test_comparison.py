"""whisper/comparison.py and the command line's --compare: plain and speculative each run their own encoder in every
timed run, though they share one loaded model and pipeline (a call of one window keeps its encoding for the next
call of the same audio, which would otherwise hand the speculative run's encoding to the plain one)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from asr_specdec.whisper import SpeculativeWhisper, compare_speeds
from asr_specdec.whisper.runtime.encoder import EncoderRunner

pytestmark = pytest.mark.slow


@pytest.fixture
def encoder_runs(monkeypatch):
    """How many times any encoder ran (every pipeline's EncoderRunner)."""
    runs = []
    original = EncoderRunner.__call__

    def counting(self, features):
        runs.append(self)
        return original(self, features)

    monkeypatch.setattr(EncoderRunner, "__call__", counting)
    return runs


@pytest.fixture(scope="module")
def pair(tiny_en_dir):
    speculative = SpeculativeWhisper(str(tiny_en_dir), mode="quantized-self", compute_type="float32")
    plain = SpeculativeWhisper.from_options(replace(speculative.model_options, main=speculative.loaded(),
                                                    processor=None, mode="off", drafter=None), speculative.options)
    assert plain.pipeline is speculative.pipeline  # one loaded model, one pipeline
    return plain, speculative


def test_without_forgetting_the_plain_call_takes_the_speculative_calls_encoding(pair, shared_audio, encoder_runs):
    """Why the comparison forgets: on a shared pipeline the second call of the same audio runs no encoder."""
    plain, speculative = pair
    if not plain.runner.backend.batch_invariant:
        pytest.skip("the PyTorch path keeps no encoding")
    clip = str(shared_audio / "LJ002-0020.wav")
    speculative.transcribe(clip)
    runs = len(encoder_runs)
    plain.transcribe(clip)
    assert len(encoder_runs) == runs == 1


def test_every_timed_run_of_each_side_runs_its_encoder(pair, shared_audio, encoder_runs):
    plain, speculative = pair
    comparison = compare_speeds(plain, speculative, shared_audio / "LJ002-0020.wav", repeats=2)
    assert len(encoder_runs) == 2 * (1 + 2)  # each side: a warm-up and two timed runs, each encoding the audio
    assert comparison.identical and comparison.plain.mode == "off" and comparison.speculative.mode == "quantized-self"
    assert comparison.repeats == 2 and "median of 2 interleaved runs" in comparison.method
    assert comparison.speedup == pytest.approx(comparison.plain_seconds / comparison.speculative_seconds)
    record = comparison.as_dict()
    assert record["repeats"] == 2 and record["identical"] is True


def test_the_command_lines_compare_encodes_in_every_run(capsys, shared_audio, encoder_runs):
    from asr_specdec.cli.transcribe import main

    code = main(["--main", "tiny.en", "--mode", "quantized-self", "--compare", str(shared_audio / "LJ002-0020.wav")])
    err = capsys.readouterr().err
    assert code == 0, err
    # the transcription itself, then each side's warm-up and three timed runs
    assert len(encoder_runs) == 1 + 2 * (1 + 3)
    assert "median of 3 interleaved runs each after a warm-up" in err and "identical output: yes" in err
