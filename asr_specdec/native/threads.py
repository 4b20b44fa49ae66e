"""How many threads the native kernels and torch's own operations take: the one place that follows the CPU this
process actually gets (docs/compute.md, Sharing a CPU).

The kernels share each product of a decoder step between their threads: they claim its items from a counter
(native/claims.h), so a thread never waits at a product for a partner the scheduler left out, but every kernel call
still ends when all of its threads have, and OpenMP's idle threads spin between calls. That is fast on CPUs this
process has to itself, and costs CPU time beside another busy process; one thread has none of it and gets its fair
share.

So the governor watches how long the calling thread waits for a CPU while runnable (the kernel's run-queue delay,
/proc/thread-self/schedstat), once per WINDOW_SECONDS of calls. Waiting more than CONTENDED of the time,
CONTENDED_WINDOWS windows in a row, halves the kernels' threads, and torch's (one OpenMP pool serves both: torch
loads the libgomp.so.1 the kernels link to); a reduced team probes twice as many once the caller has waited less
than CALM for a while (at once when nothing but its own threads is runnable on the machine: /proc/loadavg), and
waits longer before the next probe each time a probe meets contention again. Which
thread computes which rows never changes a result (the kernels are batch- and thread-invariant), so this changes
speed only, never bits.
Where the delay cannot be read (no schedstat: not Linux, or a kernel without it) the kernels keep the budget.

The budget is the thread count asked of torch (what `cpu_threads` and `--threads` set; a change made by anyone but
the governor is taken as the new request), capped by the CPUs this process may run on (its affinity mask) and by a
cgroup CPU quota (a container's `--cpus`).
"""

from __future__ import annotations

import math
import os
import threading
import time
from pathlib import Path

import torch

WINDOW_SECONDS = 0.02  # how often the run-queue delay is read (at a kernel call at least this long after the last)
# share of a window spent waiting for a CPU above which it counts as contended: beside another 2-thread job on 2
# cores, every window of a 2-thread team waits 30-60% (median 50%); alone, 5-10% of windows pass 30% (short blips)
CONTENDED = 0.3
CONTENDED_WINDOWS = 3  # consecutive contended windows that halve the team (a blip rarely lasts three)
CALM = 0.05  # share below which a reduced team counts the window towards a probe
FIRST_PROBE_SECONDS = 0.25  # calm time after a reduction before the first probe
LAST_PROBE_SECONDS = 4.0  # the longest wait, doubled after each probe that met contention again
SCHEDSTAT = "/proc/thread-self/schedstat"  # on-CPU ns, run-queue wait ns, timeslices
LOADAVG = "/proc/loadavg"  # its fourth field: threads runnable on the machine now / threads in all


def cgroup_cpus(root: Path = Path("/sys/fs/cgroup")) -> int | None:
    """CPUs a cgroup quota allows this process (rounded up), or None without a quota (cgroup v2, then v1)."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return max(1, math.ceil(quota / period)) if quota > 0 else None
    except (OSError, ValueError):
        return None


def affinity_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def thread_budget(requested: int, quota: int | None = None) -> int:
    """The most threads a call may take: the requested count, capped by affinity and a cgroup quota."""
    budget = min(requested, affinity_cpus())
    return max(1, min(budget, quota) if quota else budget)


def usable_cpus() -> int:
    """The CPUs this process may run on: the machine's, capped by its affinity and a cgroup quota."""
    return thread_budget(os.cpu_count() or 1, cgroup_cpus())


class RunQueueClock:
    """Seconds the calling thread has waited for a CPU while runnable, since it started (None where unreadable)."""

    def __init__(self, path: str = SCHEDSTAT):
        self.path, self._files = path, threading.local()

    def __call__(self) -> float | None:
        descriptor = getattr(self._files, "descriptor", None)
        try:
            if descriptor is None:  # thread-self resolves when opened: one descriptor per thread
                descriptor = self._files.descriptor = os.open(self.path, os.O_RDONLY)
            return int(os.pread(descriptor, 128, 0).split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return None


def runnable_threads(path: str = LOADAVG) -> int | None:
    """Threads runnable on the whole machine at this instant (the kernel's own count), or None where unreadable."""
    try:
        with open(path, "rb") as file:
            return int(file.read(128).split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


class ThreadGovernor:
    """The thread count of the next kernel call (`library.kernel(..., governor.threads())`), and torch's, from how
    long the calling thread has been waiting for a CPU lately (module docstring)."""

    def __init__(self, clock=time.perf_counter, waited=None, torch_threads=(torch.get_num_threads,
                                                                            torch.set_num_threads),
                 runnable=runnable_threads):
        self._clock, self._waited, self._runnable = clock, waited or RunQueueClock(), runnable
        self._get_threads, self._set_threads = torch_threads
        self._quota = cgroup_cpus()
        self.requested = self._get_threads()  # the thread count asked of torch
        self._set = None  # the count the governor last gave torch
        self.halvings = 0  # the team is the budget halved this many times (at least one thread)
        self._team = self._update_team()
        self._marks = threading.local()  # per calling thread: (wall, waited) at its last reading
        self._probe_wait = FIRST_PROBE_SECONDS
        self._calm = 0.0  # calm seconds since the last change
        self._probing = False  # the last change was a probe, not yet judged
        self._contended = 0  # consecutive contended windows

    def budget(self) -> int:
        current = self._get_threads()
        if current != self._set:  # asked by someone else (cpu_threads, --threads, the user): the new request
            self.requested = current
        return thread_budget(self.requested, self._quota)

    def _update_team(self) -> int:
        team = max(1, self.budget() >> self.halvings)
        if team != self._get_threads():
            self._set_threads(team)
            self._set = team
        return team

    def threads(self) -> int:
        now = self._clock()
        mark = getattr(self._marks, "mark", None)
        if mark is None or now - mark[0] >= WINDOW_SECONDS:
            waited = self._waited()
            self._marks.mark = (now, waited)  # unreadable too: the next reading waits a window, off the hot path
            if waited is not None and mark is not None and mark[1] is not None:
                self.observe(now - mark[0], waited - mark[1])
            self._team = self._update_team()
        return self._team

    def observe(self, wall: float, waited: float) -> None:
        """Judge a window of `wall` seconds in which the calling thread waited `waited` seconds for a CPU."""
        share = waited / wall if wall > 0 else 0.0
        if share > CONTENDED:
            self._contended += 1
            if self._contended < CONTENDED_WINDOWS and not self._probing:
                return
            self._contended = 0
            if self.budget() >> self.halvings > 1:
                if self._probing:  # the probe met contention too: wait longer before the next
                    self._probe_wait = min(2 * self._probe_wait, LAST_PROBE_SECONDS)
                self.halvings += 1
            self._probing, self._calm = False, 0.0
            return
        self._contended = 0
        if self._probing:  # the larger team ran a window without contention: a later reduction starts afresh
            self._probing, self._probe_wait = False, FIRST_PROBE_SECONDS
        if self.halvings and share < CALM:
            self._calm += wall
            if self._calm >= self._probe_wait or self._nobody_else_runs():
                self.halvings -= 1
                self._probing, self._calm = True, 0.0


    def _nobody_else_runs(self) -> bool:
        """Whether no thread but the team's own is runnable now: the job that took the CPUs has ended, so the
        team grows at once instead of after the probe wait (which grows to LAST_PROBE_SECONDS over a long
        contention: measured, a pass alone right after one took 8.4 s instead of 5.3 s at a reduced team)."""
        runnable = self._runnable()
        return runnable is not None and runnable <= self._team


_GOVERNOR: list[ThreadGovernor] = []


def governor() -> ThreadGovernor:
    """The process's governor (contention is the process's, so every kernel caller shares one)."""
    if not _GOVERNOR:
        _GOVERNOR.append(ThreadGovernor())
    return _GOVERNOR[0]
