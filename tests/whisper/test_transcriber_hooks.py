"""SpeculativeWhisper.transcribe's per-call hooks on a tiny converted Whisper: window decodes routed through a
given decoder (the server's batcher) with the call's task and sampling on each window, segments reported as
soon as they are final, and no per-call option left behind in the shared pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from asr_specdec.errors import SpecdecError

from ..tiny_ct2 import tiny_whisper_on_one_thread

pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def whisper(tmp_path_factory):
    yield from tiny_whisper_on_one_thread(tmp_path_factory)


def noise(seconds: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(int(seconds * 16000)) * 0.1).astype(np.float32)


class Recorder:
    """A window decoder that records what it is given and decodes with the pipeline."""

    def __init__(self, pipeline):
        self.pipeline, self.calls = pipeline, []

    def __call__(self, windows, speculation, generator):
        self.calls.append((windows, speculation, generator))
        return self.pipeline.decode(windows, speculation, generator)


@pytest.mark.parametrize("seconds, options", [(4.0, {}), (4.0, {"timestamps": True}), (70.0, {}),
                                              (70.0, {"long_form": "chunked", "timestamps": True})])
def test_routed_windows_give_the_same_result_and_segments_arrive_as_they_are_final(whisper, seconds, options):
    audio = noise(seconds, 3)
    expected = whisper.transcribe(audio, **options)
    recorder, segments = Recorder(whisper.pipeline), []
    result = whisper.transcribe(audio, window_decoder=recorder, on_segment=segments.append, **options)
    assert result.window_tokens == expected.window_tokens and result.segments == expected.segments
    assert len(recorder.calls) == len(expected.window_tokens)
    assert all(window.task == "transcribe" for windows, _, _ in recorder.calls for window in windows)
    assert segments == expected.segments


def test_temperature_per_call_sets_the_windows_sampling(whisper):
    recorder = Recorder(whisper.pipeline)
    whisper.transcribe(noise(2.0, 4), temperature=0.7, window_decoder=recorder)
    whisper.transcribe(noise(2.0, 4), temperature=0.0, window_decoder=recorder)
    (sampled_windows, speculation, sampled_generator), (greedy_windows, _, greedy_generator) = recorder.calls
    sampled = sampled_windows[0].sampling
    assert sampled.do_sample and sampled.temperature == 0.7 and sampled_generator is not None
    assert not greedy_windows[0].sampling.do_sample and greedy_generator is None
    assert speculation is whisper.speculation  # the transcriber's drafter and draft length
    assert not whisper.sampling.do_sample  # the shared settings are untouched
    with pytest.raises(SpecdecError, match="temperature"):
        whisper.transcribe(noise(1.0, 4), temperature=-1.0)


def test_the_task_travels_with_the_call_not_the_pipeline(whisper):
    with pytest.raises(SpecdecError, match="English-only"):
        whisper.transcribe(noise(1.0, 5), task="translate")
    assert whisper.task == "transcribe"  # a translate call no longer changes the next calls
    recorder = Recorder(whisper.pipeline)
    whisper.transcribe(noise(1.0, 5), window_decoder=recorder)
    assert recorder.calls[0][0][0].task == "transcribe"
