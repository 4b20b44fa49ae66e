"""The repetition guard on a real loop: tiny.en, greedy, on the shared clips joined (58 s) under white noise at
-3 dB SNR, says one sentence over and over in its first windows (here "I'm not going to take the picture." 8 times,
gzip compression ratios 12.2 and 3.6; nobody says it). openai's compression-ratio rule is the guard: with a
temperature ladder those windows are retried by sampling and the loop is not kept. Without a ladder (this
project's default: greedy output is exact and deterministic) nothing retries and the loop stays: the test says so
too. Which sentence loops depends on the kernels' rounding; that one does, and what the rule does, is checked."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from asr_specdec.whisper import SpeculativeWhisper
from eval.bench.nonspeech import clips, loop_words, non_speech

from ..threads import one_thread  # noqa: F401 (an autouse fixture)

pytestmark = pytest.mark.slow
THRESHOLD = 2.4  # openai's compression_ratio_threshold, the recipe's default
LADDER = dict(temperatures=(0.0, 0.4, 0.8), best_of=2)  # openai's ladder, shortened to keep the test fast


@pytest.fixture(scope="module")
def noisy(shared_audio) -> np.ndarray:
    speech = np.concatenate([samples for _, samples in clips(shared_audio)])
    noise = non_speech("white noise", len(speech) / 16000, seed=4)
    noise *= np.sqrt(np.mean(speech ** 2) / np.mean(noise ** 2)) * 10 ** (3 / 20)
    return (speech + noise).astype(np.float32)


@pytest.fixture(scope="module")
def whisper(tiny_en_dir):
    return SpeculativeWhisper(str(tiny_en_dir), mode="off", compute_type="int8:float32", seed=0)


@pytest.fixture(scope="module")
def loop(whisper, noisy):
    """(greedy result, its most repeated segment text)."""
    result = whisper.transcribe(noisy)
    sentence, count = Counter(segment.text for segment in result.segments).most_common(1)[0]
    if count < 3 or loop_words(result.text) < 9:  # the case needs a loop: found on the AVX-512 build only
        pytest.skip(f"no repetition loop forms on this build ({whisper.backend}): the case is the AVX-512 "
                    "build's (on the AVX2 build the same audio repeats its sentence twice)")
    assert max(segment.compression_ratio for segment in result.segments) > THRESHOLD
    assert {segment.temperature for segment in result.segments} == {0.0}  # no ladder: nothing retried
    return result, sentence


def test_the_compression_ratio_rule_retries_the_loop_away(whisper, noisy, loop):
    greedy, sentence = loop
    retried = whisper.transcribe(noisy, no_speech_threshold=None, **LADDER)  # every window's text kept
    assert all(segment.compression_ratio <= THRESHOLD for segment in retried.segments)
    assert any(segment.temperature > 0 for segment in retried.segments)  # retried up the ladder
    assert retried.text.count(sentence.strip()) <= 1 and loop_words(retried.text) < loop_words(greedy.text) / 4
    # with openai's no-speech rule as well (its default), the retries' low log-probability and the windows'
    # no-speech probability make them silence: skipped, loop and all
    skipped = whisper.transcribe(noisy, **LADDER)
    assert sentence.strip() not in skipped.text and loop_words(skipped.text) == 0
