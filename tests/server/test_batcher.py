"""The window batcher with stand-in pipelines: who is batched with whom, up to how many rows, what a cancelled or
failing request does to the others, and shutdown."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest

from asr_specdec.server.batcher import Cancelled, Ticket, WindowBatcher


@dataclass(frozen=True)
class FakeWindow:
    name: str
    timestamps: bool = False


class RecordingPipeline:
    """Decodes a window into its own name, records every call's rows, and can hold calls at a gate."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[list[str]] = []
        self.fail_on = fail_on
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def decode(self, windows, speculation, generator):
        self.entered.set()
        self.gate.wait(10)
        names = [window.name for window in windows]
        self.calls.append(names)
        if self.fail_on in names:
            raise ValueError(f"bad window {self.fail_on}")
        return [f"decoded {name}" for name in names]


def submit_all(batcher, jobs, pipeline, stagger: float = 0.0):
    """Submit (window, speculation, generator) jobs from threads; returns {name: result or exception}."""
    results, threads = {}, []

    def run(window, speculation, generator):
        try:
            results[window.name] = batcher.decode(pipeline, [window], speculation, generator, Ticket())
        except Exception as error:
            results[window.name] = error

    for job in jobs:
        threads.append(threading.Thread(target=run, args=job))
        threads[-1].start()
        time.sleep(stagger)
    for thread in threads:
        thread.join(10)
    return results


def test_windows_arriving_together_share_one_batch_and_each_gets_its_own_row():
    pipeline = RecordingPipeline()
    batcher = WindowBatcher(max_batch_size=8, max_wait=0.3).start()
    results = submit_all(batcher, [(FakeWindow(f"w{index}"), "greedy", None) for index in range(5)], pipeline)
    batcher.close()
    assert results == {f"w{index}": [f"decoded w{index}"] for index in range(5)}
    assert len(pipeline.calls) == 1 and sorted(pipeline.calls[0]) == [f"w{index}" for index in range(5)]
    assert batcher.counts.as_dict()["largest"] == 5


def test_batches_hold_at_most_max_batch_size_rows():
    pipeline = RecordingPipeline()
    batcher = WindowBatcher(max_batch_size=3, max_wait=0.3).start()
    results = submit_all(batcher, [(FakeWindow(f"w{index}"), "greedy", None) for index in range(7)], pipeline)
    batcher.close()
    assert all(results[f"w{index}"] == [f"decoded w{index}"] for index in range(7))
    assert [len(call) for call in pipeline.calls] == [3, 3, 1]


def test_windows_queued_while_a_batch_runs_form_the_next_batch():
    pipeline = RecordingPipeline()
    pipeline.gate.clear()
    batcher = WindowBatcher(max_batch_size=8, max_wait=0.0).start()
    first = threading.Thread(target=batcher.decode, args=(pipeline, [FakeWindow("first")], "g", None, Ticket()))
    first.start()
    assert pipeline.entered.wait(5)
    later = threading.Thread(target=submit_all, args=(
        batcher, [(FakeWindow(f"later{index}"), "g", None) for index in range(3)], pipeline))
    later.start()
    while batcher.waiting < 3:
        time.sleep(0.01)
    pipeline.gate.set()
    first.join(5)
    later.join(5)
    batcher.close()
    assert pipeline.calls[0] == ["first"] and sorted(pipeline.calls[1]) == ["later0", "later1", "later2"]


def test_only_rows_that_can_share_a_decode_call_are_batched():
    pipeline, other_pipeline = RecordingPipeline(), RecordingPipeline()
    batcher = WindowBatcher(max_batch_size=8, max_wait=0.3).start()
    sampled = object()  # a sampling generator: that request is decoded alone
    jobs = [(FakeWindow("a"), "greedy", None), (FakeWindow("b"), "greedy", None),
            (FakeWindow("other"), "another drafter", None), (FakeWindow("timed", timestamps=True), "greedy", None),
            (FakeWindow("sampled"), "greedy", sampled)]
    results = submit_all(batcher, jobs, pipeline)
    results.update(submit_all(batcher, [(FakeWindow("elsewhere"), "greedy", None)], other_pipeline))
    batcher.close()
    assert all(results[name] == [f"decoded {name}"] for name in results)
    assert sorted(sorted(call) for call in pipeline.calls) == [["a", "b"], ["other"], ["sampled"], ["timed"]]
    assert other_pipeline.calls == [["elsewhere"]]


def test_a_cancelled_request_loses_its_queued_window_and_the_others_are_decoded():
    pipeline = RecordingPipeline()
    pipeline.gate.clear()
    batcher = WindowBatcher(max_batch_size=8, max_wait=0.0).start()
    running = threading.Thread(target=batcher.decode, args=(pipeline, [FakeWindow("running")], "g", None, Ticket()))
    running.start()
    assert pipeline.entered.wait(5)
    ticket, outcome = Ticket(), {}

    def queued():
        try:
            batcher.decode(pipeline, [FakeWindow("gone")], "g", None, ticket)
        except Cancelled as error:
            outcome["error"] = error

    waiter = threading.Thread(target=queued)
    waiter.start()
    while batcher.waiting < 1:
        time.sleep(0.01)
    ticket.cancel("the client disconnected")
    waiter.join(5)
    assert str(outcome["error"]) == "the client disconnected" and batcher.waiting == 0
    pipeline.gate.set()
    running.join(5)
    assert submit_all(batcher, [(FakeWindow("next"), "g", None)], pipeline) == {"next": ["decoded next"]}
    batcher.close()
    assert pipeline.calls == [["running"], ["next"]]
    with pytest.raises(Cancelled, match="disconnected"):
        batcher.decode(pipeline, [FakeWindow("late")], "g", None, ticket)


def test_a_failing_window_fails_only_its_own_request():
    pipeline = RecordingPipeline(fail_on="bad")
    batcher = WindowBatcher(max_batch_size=8, max_wait=0.3).start()
    results = submit_all(batcher, [(FakeWindow(name), "g", None) for name in ("good1", "bad", "good2")], pipeline)
    batcher.close()
    assert results["good1"] == ["decoded good1"] and results["good2"] == ["decoded good2"]
    assert isinstance(results["bad"], ValueError)


def test_closing_fails_waiting_windows_and_refuses_new_ones():
    pipeline = RecordingPipeline()
    pipeline.gate.clear()
    batcher = WindowBatcher(max_batch_size=1, max_wait=0.0).start()
    running = threading.Thread(target=batcher.decode, args=(pipeline, [FakeWindow("running")], "g", None, Ticket()))
    running.start()
    assert pipeline.entered.wait(5)
    results = {}
    waiting = threading.Thread(target=lambda: results.update(
        submit_all(batcher, [(FakeWindow("waiting"), "g", None)], pipeline)))
    waiting.start()
    while batcher.waiting < 1:
        time.sleep(0.01)
    closer = threading.Thread(target=batcher.close, kwargs={"timeout": 5})
    closer.start()
    waiting.join(5)
    assert isinstance(results["waiting"], Cancelled)
    pipeline.gate.set()
    closer.join(5)
    running.join(5)
    assert pipeline.calls == [["running"]]
    with pytest.raises(Cancelled, match="shutting down"):
        batcher.decode(pipeline, [FakeWindow("after")], "g", None, Ticket())


def test_a_call_runs_on_the_decoding_thread_between_batches_and_returns_its_result():
    pipeline = RecordingPipeline()
    pipeline.gate.clear()
    batcher = WindowBatcher(max_batch_size=4, max_wait=0.0).start()
    running = threading.Thread(target=batcher.decode, args=(pipeline, [FakeWindow("running")], "g", None, Ticket()))
    running.start()
    assert pipeline.entered.wait(5)
    outcome = {}

    def work():
        outcome["thread"] = threading.current_thread().name
        outcome["calls while it ran"] = list(pipeline.calls)
        return "result"

    caller = threading.Thread(target=lambda: outcome.update(result=batcher.call(work, Ticket())))
    caller.start()
    time.sleep(0.1)
    assert "result" not in outcome  # waits for the running batch
    pipeline.gate.set()
    caller.join(5)
    running.join(5)
    assert outcome == {"thread": "window-batcher", "calls while it ran": [["running"]], "result": "result"}

    def failing():
        raise ValueError("bad stream chunk")

    with pytest.raises(ValueError, match="bad stream chunk"):
        batcher.call(failing, Ticket())
    assert batcher.decode(pipeline, [FakeWindow("after")], "g", None, Ticket()) == ["decoded after"]
    assert batcher.counts.batches == 2  # calls are not batches
    batcher.close()
