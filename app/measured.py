"""The CPU figures the page quotes (compute types, drafters), from app/measured.json, which
`python -m eval.bench.readme_tables write` rewrites from the same benchmark run as the README's tables."""

from __future__ import annotations

import json
from pathlib import Path

MEASURED_FILE = Path(__file__).with_name("measured.json")
_measured = json.loads(MEASURED_FILE.read_text())

SOURCE: str = _measured["source"]
BUILD: str = _measured["build"]  # the kernels measured on ("native avx512"): capabilities().description
# compute type -> (speed vs float32, clips whose text equals float32's, clips)
COMPUTE_TYPES = {name: (entry["speed_vs_float32"], entry["same_text"], entry["clips"])
                 for name, entry in _measured["compute_types"].items()}
# drafting mode -> total-time speedup over plain decoding
DRAFTERS: dict[str, float] = dict(_measured["drafters"])


def measured_here(device: str) -> bool:
    """Whether the figures hold for `device`: a CPU running the kernel build they were measured on (a CPU on
    another build, or on PyTorch, runs other code at other speeds)."""
    if str(device) != "cpu":
        return False
    from asr_specdec.native import capabilities

    return capabilities().description == BUILD
