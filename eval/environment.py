"""The machine and software a report was measured on, so that two reports can be compared honestly."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

LIBRARIES = ("asr-specdec", "torch", "transformers", "datasets", "jiwer", "numpy", "soundfile", "ray")


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def machine() -> dict:
    import torch

    gpus = [torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count())]
    return {"cpu": cpu_model(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "gpus": gpus, "platform": platform.platform(), "python": platform.python_version()}


def library_versions() -> dict:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
