"""The aten operations a piece of PyTorch code dispatches, counted with a dispatch mode (on any device, a CPU
included): on a GPU each is a kernel launch, whose cost to issue bounds a small decoder step."""

from __future__ import annotations

from collections import Counter

from torch.utils._python_dispatch import TorchDispatchMode


class _Operations(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.counts: Counter = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))


def count_operations(function) -> Counter:
    """aten operation name -> how many times `function()` dispatched it."""
    operations = _Operations()
    with operations:
        function()
    return operations.counts
