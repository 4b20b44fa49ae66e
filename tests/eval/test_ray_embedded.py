"""An embedded Ray is given the CPUs this process may use (its affinity and cgroup quota), not the host's: a
pool larger than those is then refused at once instead of crowding them. A stand-in for Ray records what it is given."""

from __future__ import annotations

import eval.ray_runner as ray_runner
from eval.job import EngineOptions
from eval.ray_runner import RayEngine
from eval.settings import EvalSettings


class RecordingRay:
    def __init__(self):
        self.init_arguments = None

    def init(self, **arguments):
        self.init_arguments = arguments


def test_an_embedded_ray_gets_the_usable_cpus(monkeypatch, shared_audio):
    monkeypatch.setattr(ray_runner.os, "cpu_count", lambda: 64)  # a container with 2 CPUs on a 64-CPU host
    monkeypatch.setattr(ray_runner, "usable_cpus", lambda: 2)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray = RecordingRay()
    engine = RayEngine(EvalSettings(str(shared_audio), modes=("off",), main="tiny.en"), EngineOptions("ray"))
    engine._init(ray)
    assert ray.init_arguments["num_cpus"] == 2 and ray.init_arguments["address"] == "local"
    assert ray.init_arguments["_system_config"] == {"worker_niceness": 0}
