"""mapped.py: letting a memory-mapped tensor's pages go leaves its values and drops it from the resident set;
a tensor in ordinary memory is never touched; pages found once (file_pages) go in a few spans."""

from __future__ import annotations

import mmap

import torch

from asr_specdec.weights.mapped import file_pages, let_go
from tests.resident import resident_kib


def test_mapped_pages_go_and_values_stay(tmp_path):
    from safetensors.torch import load_file, save_file

    path = tmp_path / "weights.safetensors"
    save_file({"a": torch.randn(1024, 1024), "b": torch.randn(512, 1024)}, str(path))
    loaded = load_file(str(path))
    sums = {name: float(tensor.double().sum()) for name, tensor in loaded.items()}  # reads every page
    before = resident_kib(path)
    assert before >= 5 * 1024
    released = let_go(*loaded.values())
    assert released >= 5 * 1024 * 1024 and resident_kib(path) <= before - 5 * 1024
    assert {name: float(tensor.double().sum()) for name, tensor in loaded.items()} == sums  # read back from the file


def test_ordinary_memory_is_left_alone():
    tensor = torch.randn(1 << 20)
    copy = tensor.clone()
    assert let_go(tensor, None, torch.empty(0)) == 0
    assert torch.equal(tensor, copy)


def test_pages_found_once_go_in_one_span_per_mapping_and_come_back(tmp_path):
    from safetensors.torch import load_file, save_file

    path = tmp_path / "packs.safetensors"
    save_file({f"layer{index}": torch.randn(300 + index, 1000) for index in range(6)}, str(path))  # not page-sized
    loaded = load_file(str(path))
    heap = torch.randn(1 << 18)
    pages = file_pages(*loaded.values(), heap, None)
    assert len(pages.drops) == 1  # neighbours in one file: one span, whatever pages they share
    assert pages.bytes >= sum(tensor.nbytes for tensor in loaded.values()) - 2 * mmap.PAGESIZE  # the two ends
    sums = {name: float(tensor.double().sum()) for name, tensor in loaded.items()}
    before = resident_kib(path)
    assert before * 1024 >= pages.bytes
    for drop in pages.drops:
        assert drop() == 0
    assert resident_kib(path) * 1024 <= before * 1024 - pages.bytes
    assert {name: float(tensor.double().sum()) for name, tensor in loaded.items()} == sums
    assert not file_pages(heap).drops
