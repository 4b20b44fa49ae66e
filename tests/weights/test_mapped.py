"""mapped.py: letting a memory-mapped tensor's pages go leaves its values and drops it from the resident set;
a tensor in ordinary memory is never touched."""

from __future__ import annotations

import torch

from asr_specdec.weights.mapped import let_go


def _resident_kib(path) -> int:
    """Resident KiB of this process's mappings of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:  # a mapping's header line
                inside = len(fields) > 5 and fields[5] == str(path)
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def test_mapped_pages_go_and_values_stay(tmp_path):
    from safetensors.torch import load_file, save_file

    path = tmp_path / "weights.safetensors"
    save_file({"a": torch.randn(1024, 1024), "b": torch.randn(512, 1024)}, str(path))
    loaded = load_file(str(path))
    sums = {name: float(tensor.double().sum()) for name, tensor in loaded.items()}  # reads every page
    before = _resident_kib(path)
    assert before >= 5 * 1024
    released = let_go(*loaded.values())
    assert released >= 5 * 1024 * 1024 and _resident_kib(path) <= before - 5 * 1024
    assert {name: float(tensor.double().sum()) for name, tensor in loaded.items()} == sums  # read back from the file


def test_ordinary_memory_is_left_alone():
    tensor = torch.randn(1 << 20)
    copy = tensor.clone()
    assert let_go(tensor, None, torch.empty(0)) == 0
    assert torch.equal(tensor, copy)
