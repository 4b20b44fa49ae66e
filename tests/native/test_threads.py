"""native/threads.py: the governor halves the threads when the caller waits for a CPU, probes back when it stops,
follows a new request and the CPUs the process may use; and a decode whose thread count changes from call to call
gives the bits of a decode on a fixed count."""

from __future__ import annotations

import threading

import pytest
import torch

from asr_specdec.native import threads as governed
from asr_specdec.native.threads import RunQueueClock, ThreadGovernor, cgroup_cpus, usable_cpus

WINDOW = governed.WINDOW_SECONDS


class Scheduler:
    """A clock and a run-queue clock moved by hand, torch's thread count as a number, and the machine's runnable
    threads (by default more than the team: someone else is busy)."""

    def __init__(self, threads: int = 2):
        self.now, self.waited, self.torch_threads, self.runnable = 0.0, 0.0, threads, 5

    def governor(self, monkeypatch, cpus: int = 2) -> ThreadGovernor:
        monkeypatch.setattr(governed, "affinity_cpus", lambda: cpus)
        monkeypatch.setattr(governed, "cgroup_cpus", lambda: None)
        return ThreadGovernor(clock=lambda: self.now, waited=lambda: self.waited,
                              torch_threads=(lambda: self.torch_threads, self.set_threads),
                              runnable=lambda: self.runnable)

    def set_threads(self, count: int) -> None:
        self.torch_threads = count

    def window(self, governor: ThreadGovernor, waiting_share: float, seconds: float = 1.5 * WINDOW) -> int:
        self.now += seconds
        self.waited += waiting_share * seconds
        return governor.threads()


def contend(scheduler: Scheduler, governor: ThreadGovernor) -> None:
    for _ in range(governed.CONTENDED_WINDOWS):
        scheduler.window(governor, 0.5)


def test_contention_halves_the_threads_of_the_kernels_and_of_torch(monkeypatch):
    scheduler = Scheduler()
    governor = scheduler.governor(monkeypatch)
    assert governor.threads() == 2
    for _ in range(20):  # alone: the caller never waits
        assert scheduler.window(governor, 0.0) == 2
    for _ in range(governed.CONTENDED_WINDOWS - 1):  # a blip
        assert scheduler.window(governor, 0.5) == 2
    assert scheduler.window(governor, 0.0) == 2
    contend(scheduler, governor)  # a run of contended windows: contention
    assert governor.threads() == 1
    assert scheduler.torch_threads == 1
    for _ in range(10):  # still contended: stays at one thread, never below
        assert scheduler.window(governor, 0.4) == 1


def test_a_reduced_team_probes_back_and_waits_longer_after_each_failed_probe(monkeypatch):
    scheduler = Scheduler()
    governor = scheduler.governor(monkeypatch)
    governor.threads()
    contend(scheduler, governor)
    assert governor.threads() == 1

    def calm_until_probe() -> float:
        started = scheduler.now
        while scheduler.window(governor, 0.0) == 1:
            assert scheduler.now - started < 10
        return scheduler.now - started

    first = governed.FIRST_PROBE_SECONDS
    assert calm_until_probe() == pytest.approx(first, abs=2 * WINDOW)
    assert scheduler.torch_threads == 2
    assert scheduler.window(governor, 0.5) == 1  # the probe meets contention: back at once
    assert calm_until_probe() == pytest.approx(2 * first, abs=2 * WINDOW)  # and the next waits twice as long
    assert scheduler.window(governor, 0.5) == 1
    assert calm_until_probe() == pytest.approx(4 * first, abs=2 * WINDOW)
    assert scheduler.window(governor, 0.0) == 2  # this probe holds: the machine is free again
    contend(scheduler, governor)
    assert governor.threads() == 1
    assert calm_until_probe() == pytest.approx(first, abs=2 * WINDOW)  # a later reduction starts afresh


def test_a_reduced_team_grows_at_once_when_nothing_else_runs(monkeypatch):
    scheduler = Scheduler()
    governor = scheduler.governor(monkeypatch)
    governor.threads()
    for _ in range(4):  # a long contention: the probe wait has grown
        contend(scheduler, governor)
        while scheduler.window(governor, 0.0) == 1:
            pass
    contend(scheduler, governor)
    assert governor.threads() == 1 and governor._probe_wait > governed.FIRST_PROBE_SECONDS
    assert scheduler.window(governor, 0.0) == 1  # calm, but another job's threads are still runnable
    scheduler.runnable = 1  # the other job ended: only the caller runs
    assert scheduler.window(governor, 0.0) == 2
    assert scheduler.window(governor, 0.0) == 2


def test_runnable_threads_reads_the_kernels_count(tmp_path):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.81 1.30 1.69 3/345 12345\n")
    assert governed.runnable_threads(str(loadavg)) == 3
    assert governed.runnable_threads(str(tmp_path / "none")) is None
    assert governed.runnable_threads() is None or governed.runnable_threads() >= 1  # this thread runs


def test_a_new_thread_request_is_followed_and_capped_by_the_cpus_the_process_may_use(monkeypatch):
    scheduler = Scheduler(threads=2)
    governor = scheduler.governor(monkeypatch, cpus=4)
    assert governor.threads() == 2
    scheduler.torch_threads = 8  # cpu_threads=8 on a process allowed 4 CPUs
    assert scheduler.window(governor, 0.0) == 4
    assert governor.requested == 8 and scheduler.torch_threads == 4
    contend(scheduler, governor)
    assert governor.threads() == 2  # contention halves the capped budget
    scheduler.torch_threads = 1  # the user asks for one thread: no halving below it, no probe above it
    for _ in range(100):
        assert scheduler.window(governor, 0.0) == 1


def test_without_a_run_queue_clock_the_budget_is_kept(monkeypatch):
    scheduler = Scheduler()
    monkeypatch.setattr(governed, "affinity_cpus", lambda: 2)
    governor = ThreadGovernor(clock=lambda: scheduler.now, waited=lambda: None,
                              torch_threads=(lambda: scheduler.torch_threads, scheduler.set_threads))
    for _ in range(10):
        assert scheduler.window(governor, 0.9) == 2


def test_cgroup_quotas_v2_and_v1(tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert cgroup_cpus(tmp_path) == 2  # 1.5 CPUs: two threads, one of them not always running
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpus(tmp_path) is None
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpus(tmp_path) == 1
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpus(tmp_path) is None
    assert cgroup_cpus(tmp_path / "absent") is None


def test_usable_cpus_are_the_machines_within_the_affinity_and_the_quota(monkeypatch):
    monkeypatch.setattr(governed.os, "cpu_count", lambda: 64)  # a container on a large host
    monkeypatch.setattr(governed, "cgroup_cpus", lambda: None)
    monkeypatch.setattr(governed, "affinity_cpus", lambda: 64)
    assert usable_cpus() == 64
    monkeypatch.setattr(governed, "cgroup_cpus", lambda: 2)  # docker --cpus 2
    assert usable_cpus() == 2
    monkeypatch.setattr(governed, "affinity_cpus", lambda: 1)  # taskset -c 0
    assert usable_cpus() == 1


def test_the_run_queue_clock_reads_each_threads_own_delay():
    clock = RunQueueClock()
    if clock() is None:
        pytest.skip("no /proc/thread-self/schedstat on this system")
    readings = {}

    def read(name):
        first = clock()
        sum(range(200_000))
        readings[name] = (first, clock())

    workers = [threading.Thread(target=read, args=(name,)) for name in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    for first, second in readings.values():
        assert 0.0 <= first <= second
    assert clock() is not None
    assert RunQueueClock("/nonexistent/schedstat")() is None


def test_a_decode_whose_thread_count_changes_every_call_gives_the_same_tokens(monkeypatch):
    from asr_specdec.whisper.drafters import QuantizedSelfDrafter
    from asr_specdec.whisper.runtime.compute import parse_compute_type
    from asr_specdec.whisper.runtime.decoder import native_decoder_unavailable
    from asr_specdec.whisper.runtime.pipeline import Window, WindowPipeline

    from ..tiny_whisper import DraftedPipeline, features_for, tiny_whisper

    model = tiny_whisper(0)
    if native_decoder_unavailable(model) is not None:
        pytest.skip("the native kernels do not run here")
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        def decode(count) -> list[list[int]]:
            monkeypatch.setattr(ThreadGovernor, "threads", lambda self: next(count))
            pipeline = WindowPipeline(model, None, compute=parse_compute_type("int8"))
            drafted = DraftedPipeline(pipeline, QuantizedSelfDrafter(pipeline.model), 4, max_new_tokens=40)
            windows = [Window(features_for(model, seed)) for seed in range(3)]
            return [row.tokens for row in drafted.decode(windows)]

        def alternating():
            while True:
                yield 1
                yield 2

        def fixed():
            while True:
                yield 2

        def oversubscribed():  # more threads than this machine's cores: threads preempted while others claim items
            while True:
                yield from (3, 5, 1, 8)

        reference = decode(fixed())
        assert any(len(tokens) > 5 for tokens in reference)
        assert decode(alternating()) == reference
        assert decode(oversubscribed()) == reference
    finally:
        torch.set_num_threads(threads)
