"""The faithfulness benchmark's fast subset (issue 25): a few seconds of every kind of non-speech through the
offline path of tiny.en writes no word, a short join of shared clips with long pauses loses no word of the clips
decoded alone, and the measures themselves (loops, lost and invented words) count what they say."""

from __future__ import annotations

import numpy as np
import pytest

from eval.bench.nonspeech import NON_SPEECH, RATE, clips, joined, loop_words, non_speech, word_counts

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tiny(tiny_en_dir):
    from asr_specdec.whisper import SpeculativeWhisper

    return SpeculativeWhisper(str(tiny_en_dir))


def test_every_kind_of_non_speech_is_what_it_says():
    for kind in NON_SPEECH:
        signal = non_speech(kind, 2.0)
        assert signal.dtype == np.float32 and len(signal) == 2 * RATE and np.abs(signal).max() <= 1.0
        assert np.array_equal(signal, non_speech(kind, 2.0))  # reproducible
    assert not non_speech("silence", 1.0).any() and non_speech("DC offset", 1.0).mean() > 0.3
    spectrum = np.abs(np.fft.rfft(non_speech("440 Hz tone", 1.0)))
    assert np.argmax(spectrum) == 440
    with pytest.raises(ValueError):
        non_speech("applause", 1.0)


def test_loops_and_word_counts():
    assert loop_words("you you you you") == 3
    assert loop_words("thank you thank you thank you so much") == 4
    assert loop_words("thank you thank you") == 0 and loop_words("a b c d") == 0
    counts = word_counts("he was not an ill disposed young man", "he was an ill disposed young man thank you")
    assert counts["lost"] == 1 and counts["invented"] == 2 and counts["reference_words"] == 8
    assert counts["wer"] == pytest.approx(3 / 8)


def test_non_speech_through_the_offline_path_writes_nothing(tiny):
    texts = {kind: tiny.transcribe(non_speech(kind, 3.0, seed=index)).text
             for index, kind in enumerate(NON_SPEECH)}
    assert texts == {kind: "" for kind in NON_SPEECH}


def test_speech_with_long_pauses_loses_no_word(tiny, shared_audio):
    named = clips(shared_audio, ["goforward.wav", "forever.wav", "librivox-0880.wav"])
    alone = " ".join(tiny.transcribe(samples).text for _, samples in named)
    paused = joined([samples for _, samples in named], np.zeros(4 * RATE, dtype=np.float32))
    counts = word_counts(alone, tiny.transcribe(paused).text)
    assert counts["reference_words"] >= 15
    assert counts["lost"] == 0 and counts["invented"] == 0


def test_the_server_path_writes_nothing_on_non_speech_and_what_offline_writes_on_speech(tiny, shared_audio):
    from eval.bench.faithful import server_texts

    named = clips(shared_audio, ["goforward.wav"])
    files = {kind: non_speech(kind, 2.0, seed=index) for index, kind in enumerate(NON_SPEECH[:3])}
    files["goforward"] = named[0][1]
    texts = server_texts(tiny, files)
    assert texts == {**{kind: "" for kind in NON_SPEECH[:3]}, "goforward": tiny.transcribe(named[0][1]).text.strip()}
    assert "forward" in texts["goforward"]
