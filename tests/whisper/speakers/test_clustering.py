"""Window embeddings into voices: a given count, an estimated one, and more asked for than there are voices."""

from __future__ import annotations

import numpy as np
import pytest

from asr_specdec.whisper.speakers.clustering import cluster


def voices(count: int, windows: int = 12, spread: float = 0.15, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Unit embeddings scattered around `count` random directions, in turns of `windows` each."""
    random = np.random.default_rng(seed)
    centres = random.standard_normal((count, 64))
    truth = np.repeat(np.arange(count), windows)
    points = centres[truth] / np.linalg.norm(centres[truth], axis=1, keepdims=True) + \
        spread * random.standard_normal((len(truth), 64)) / 8
    return points / np.linalg.norm(points, axis=1, keepdims=True), truth


@pytest.mark.parametrize("count", [2, 3, 4])
@pytest.mark.parametrize("given", [True, False])
def test_voices_are_found_given_or_estimated(count, given):
    embeddings, truth = voices(count)
    labels = cluster(embeddings, count if given else None, same_speaker_distance=0.35, max_count=8)
    assert np.array_equal(labels, truth)  # numbered in order of appearance, as the truth is


def test_more_speakers_asked_than_voices_heard_gives_the_voices():
    embeddings, truth = voices(2)
    assert np.array_equal(cluster(embeddings, 5, 0.35, 8, distinct_voice_distance=0.2), truth)
    assert cluster(embeddings, 5, 0.35, 8, distinct_voice_distance=0.0).max() == 4  # the rule off: five kept


def test_an_estimate_stops_at_max_speakers_and_one_window_is_one_voice():
    embeddings, _ = voices(5, windows=4)
    assert cluster(embeddings, None, 0.35, max_count=3).max() == 2
    assert cluster(embeddings[:1], None, 0.35, 8).tolist() == [0]
    assert cluster(embeddings, 1, 0.35, 8).max() == 0


def test_a_voice_of_too_few_windows_is_left_out_estimated_or_asked_for():
    embeddings, truth = voices(3, windows=8)
    few = np.concatenate([np.flatnonzero(truth != 2), np.flatnonzero(truth == 2)[:2]])  # the third voice: 2 windows
    estimated = cluster(embeddings[few], None, 0.35, 8, fewest_windows=3)
    assert estimated.max() == 1 and np.array_equal(estimated[:16], truth[:16])
    assert cluster(embeddings[few], None, 0.35, 8, fewest_windows=2).max() == 2  # enough windows: counted
    assert cluster(embeddings[few], 3, 0.35, 8, fewest_windows=3).max() == 1  # asked for three: two heard
    assert cluster(embeddings[few], 3, 0.35, 8, fewest_windows=2).max() == 2
