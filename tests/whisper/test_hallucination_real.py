"""hallucination_silence_threshold on real weights: on a file where base writes words nobody said after the speech
(tests/silences.py), the option drops exactly those segments, each judged by openai's rule (anomalous words,
silence around), and leaves the speech alone; the faster-whisper drop-in and the command line honour it too."""

from __future__ import annotations

import pytest

from asr_specdec.compat import WhisperModel
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.longform.hallucination import is_anomaly

from ..silences import speech_in_silence
from ..threads import one_thread  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def audio(shared_audio):
    return speech_in_silence(shared_audio)


@pytest.fixture(scope="module")
def whisper(base_dir):
    return SpeculativeWhisper(str(base_dir), mode="off", compute_type="float32")


@pytest.fixture(scope="module")
def results(whisper, audio):
    """(without the option, with it at 2 s)."""
    return (whisper.transcribe(audio, word_timestamps=True),
            whisper.transcribe(audio, word_timestamps=True, hallucination_silence_threshold=2.0))


def spans(result):
    return [(segment.start, segment.end, segment.text) for segment in result.segments]


def test_the_hallucinated_segments_go_and_the_speech_stays(whisper, audio, results):
    plain, guarded = results
    assert [text for *_, text in spans(plain)][-1] == " Okay."  # the case: words nobody said, after the speech
    assert spans(guarded) == spans(plain)[:-1]  # the speech, with the same times
    assert guarded.text == " Go forward 10 meters. I'm Abigail Claflin. You can call me Abby."
    last = plain.segments[-1]
    assert is_anomaly(last.words) and audio.shape[0] / 16000 - last.end > 2.0  # the rule's reasons
    # decoding went on from 1 s past the dropped window's start, where Whisper wrote " Thank you." (dropped too)
    assert len(guarded.window_tokens) == len(plain.window_tokens) + 1
    assert "Thank you" in whisper.pipeline.segment_text(guarded.window_tokens[-1])


def test_the_drop_in_honours_it(base_dir, whisper, audio, results):
    """faster-whisper's arguments for the same decoding (greedy, no fallback, no conditioning) give the same
    segments as the library with the option on faster-whisper's features and seek (the drop-in's): the
    hallucinations are gone there too."""
    model = WhisperModel(str(base_dir), compute_type="float32")
    segments, info = model.transcribe(audio, hallucination_silence_threshold=2.0, beam_size=1, word_timestamps=True,
                                      condition_on_previous_text=False, temperature=0.0)
    assert info.transcription_options.hallucination_silence_threshold == 2.0
    library = whisper.transcribe(audio, word_timestamps=True, hallucination_silence_threshold=2.0,
                                 whole_features=True, seek_to_words=False)
    assert [(segment.start, segment.end, segment.text) for segment in segments] == spans(library)
    assert [text for *_, text in spans(library)] == [text for *_, text in spans(results[1])]
