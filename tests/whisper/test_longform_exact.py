"""The core invariant in timestamp mode, over whole sequential long-form runs on tiny random models: every
drafter gives exactly plain greedy's tokens in every window, so the same segments and the same seeking."""

from __future__ import annotations

import pytest

from asr_specdec.whisper.longform.sequential import transcribe_sequential

from ..tiny_longform import FRAMES, TIMESTAMP_BEGIN, long_features, timestamp_whisper, window_decoder
from ..tiny_whisper import EOS, drafter_factories

MAIN = timestamp_whisper(0)
OTHER = timestamp_whisper(1)  # same vocabulary, unrelated weights: many rejections
DRAFTERS = drafter_factories(MAIN, OTHER)
FEATURE_SEEDS = (1, 3)  # between them, windows end in all four ways (see the last test)
PLAIN: dict = {}


def run(seed, condition, drafter_factory=None, draft_tokens=4, dynamic=False):
    stats = []
    output = transcribe_sequential(long_features(seed), window_decoder(
        MAIN, drafter_factory, draft_tokens, dynamic, stats), TIMESTAMP_BEGIN, EOS, FRAMES, condition)
    return output, stats


def plain(seed, condition):
    if (seed, condition) not in PLAIN:
        PLAIN[seed, condition] = run(seed, condition)[0]
    return PLAIN[seed, condition]


@pytest.mark.parametrize("name", DRAFTERS)
@pytest.mark.parametrize("seed", FEATURE_SEEDS)
@pytest.mark.parametrize("condition", [False, True])
def test_every_drafter_gives_plain_windows_and_segments(name, seed, condition):
    expected = plain(seed, condition)
    for draft_tokens, dynamic in ((2, False), (6, True)):
        output, stats = run(seed, condition, DRAFTERS[name], draft_tokens, dynamic)
        assert output.window_tokens == expected.window_tokens, (draft_tokens, dynamic)
        assert output.segments == expected.segments
        # n-gram lookup finds nothing to copy in some short random windows; the previous text gives it some
        if name != "prompt-lookup" or condition:
            assert sum(s.drafted_tokens for s in stats) > 0


def test_the_windows_end_in_every_way_whisper_windows_end():
    endings = set()
    for seed in FEATURE_SEEDS:
        for condition in (False, True):
            for tokens in plain(seed, condition).window_tokens:
                stamps = [token >= TIMESTAMP_BEGIN for token in tokens[:-1]]
                if tokens[-1] != EOS:
                    endings.add("length limit")
                elif stamps[-2:] == [True, True]:
                    endings.add("pair")
                elif stamps[-2:] == [False, True]:
                    endings.add("single timestamp")
                else:
                    endings.add("text")
    assert endings == {"length limit", "single timestamp", "pair", "text"}


def test_a_self_assistant_is_always_accepted_in_timestamp_mode():
    _, stats = run(0, True, DRAFTERS["assistant-self"], draft_tokens=6)
    assert sum(s.accepted_tokens for s in stats) == sum(s.drafted_tokens for s in stats) > 0
