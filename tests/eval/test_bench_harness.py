"""eval/bench/harness.py: the timing loop takes turns round by round after one warm-up, keeps each round's
seconds and the last result, reports what a system refuses when asked to, and the flags are spelled once."""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import pytest

from eval.bench import harness


def test_systems_take_turns_item_by_item_in_every_round():
    calls = []
    systems = {name: (lambda item, name=name: calls.append((name, item)) or f"{name}:{item}") for name in "ab"}
    rounds = harness.interleave(systems, ["x", "y"], repeats=2)
    warm_up = [("a", "x"), ("b", "x")]
    one_round = [("a", "x"), ("b", "x"), ("a", "y"), ("b", "y")]
    assert calls == warm_up + one_round + one_round
    assert [len(seconds) for seconds in rounds.seconds["a"]] == [2, 2]
    assert rounds.results["b"] == ["b:x", "b:y"]


def test_seconds_are_reduced_per_item_then_summed():
    clock = iter([3.0, 1.0, 5.0, 2.0, 4.0, 9.0])
    rounds = harness.interleave({"a": lambda item: item}, [0, 1], repeats=3, warm_up=False,
                                seconds_of=lambda result, wall: next(clock))
    assert rounds.seconds["a"] == [[3.0, 5.0, 4.0], [1.0, 2.0, 9.0]]
    assert rounds.per_item("a") == [3.0, 1.0] and rounds.total("a") == 4.0
    assert rounds.total("a", statistics.median) == 6.0


def test_each_sees_every_run_in_order():
    seen = []
    harness.interleave({"a": len, "b": str}, ["xy"], repeats=2, warm_up=False,
                       each=lambda name, index, result, seconds: seen.append((name, index, result)))
    assert seen == [("a", 0, 2), ("b", 0, "xy")] * 2


def test_a_refusal_is_reported_only_for_the_systems_named():
    def refuse(item):
        raise ValueError("assisted generate is only\nsupported for batch_size = 1")

    rounds = harness.interleave({"ours": len, "theirs": refuse}, ["a", "bb"], repeats=2, catch=["theirs"])
    assert rounds.errors == {"theirs": "ValueError: assisted generate is only supported for batch_size = 1"}
    assert rounds.results["ours"] == [1, 2] and rounds.seconds["theirs"] == [[], []]
    with pytest.raises(ValueError):
        harness.interleave({"ours": refuse}, ["a"], catch=["theirs"])


def test_best_of_and_timed():
    calls = []
    best, last = harness.best_of(lambda: calls.append(1) or len(calls), 3)
    assert last == 3 and len(calls) == 3 and 0 <= best < 1
    value, seconds = harness.timed(sorted, [2, 1])
    assert value == [1, 2] and seconds >= 0


def test_the_common_flags():
    parser = argparse.ArgumentParser()
    harness.add_common_flags(parser, repeats=3, threads=2)
    args = parser.parse_args([])
    assert (args.main, args.repeats, args.threads) == ("base", 3, 2) and args.audio.endswith("audio")
    bare = argparse.ArgumentParser()
    harness.add_common_flags(bare, main=False, repeats=False, audio=False, threads=False)
    assert vars(bare.parse_args([])) == {}


def test_the_long_file_is_every_clip_with_its_gap(tmp_path):
    import soundfile

    for name, seconds in (("a.wav", 1.0), ("b.wav", 0.25)):
        soundfile.write(tmp_path / name, np.full(int(16000 * seconds), 0.1, dtype=np.float32), 16000)
    (tmp_path / "manifest.jsonl").write_text('{"audio": "a.wav"}\n{"audio": "b.wav"}\n')
    assert harness.manifest_clips(tmp_path) == [tmp_path / "a.wav", tmp_path / "b.wav"]
    joined = harness.joined_clips(tmp_path, gap_seconds=0.5)
    assert len(joined) == 16000 + 8000 + 4000 + 8000
    assert not joined[16000:24000].any() and joined[24000:28000].all()
