"""Device mistakes made visible on a CPU-only machine.

On a CPU every tensor is on the same device, so a tensor created without the device of the data it meets (an
index built with `torch.tensor(rows)`, a random draw without `device=`) works here and fails on a GPU. Within
`explicit_devices()`, every tensor factory that package code calls without a `device` argument is recorded with
its file and line, and so is every random draw made outside `core/logits.py` (the one place that takes
probabilities to the generator's device); tests assert there are none on the paths a GPU runs. Torch's function
modes are per thread: threads started within the context (a server's workers) are recorded into the same list.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

PACKAGE = Path(__file__).resolve().parents[1] / "asr_specdec"
DRAWS = {torch.multinomial, torch.Tensor.multinomial, torch.bernoulli, torch.Tensor.bernoulli_, torch.normal}
DRAWING_MODULE = "asr_specdec/core/logits.py"


class _Recorder(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls: list[str] = []
        self._factories = _device_constructors()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self._factories and kwargs.get("device") is None:
            caller = _package_caller()
            if caller is not None:
                self.calls.append(f"{caller} {getattr(func, '__name__', func)}")
        elif func in DRAWS:
            caller = _package_caller()
            if caller is not None and not caller.startswith(DRAWING_MODULE + ":"):
                self.calls.append(f"{caller} {getattr(func, '__name__', func)} outside {DRAWING_MODULE}")
        return func(*args, **kwargs)


def _package_caller() -> str | None:
    """'file:line' of the nearest frame in package code, when the factory was called from it directly (not from
    a library the package calls)."""
    frame = sys._getframe(2)
    while frame is not None and "/torch/" in frame.f_code.co_filename:
        frame = frame.f_back
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename)
    if PACKAGE not in path.parents:
        return None
    return f"{path.relative_to(PACKAGE.parent)}:{frame.f_lineno}"


@contextmanager
def explicit_devices() -> Iterator[list[str]]:
    """Yields the list that collects, as 'file:line factory', the device-less factory calls of package code."""
    recorder = _Recorder()
    run = threading.Thread.run

    def recorded_run(thread):
        with _Recorder() as own:
            own.calls = recorder.calls
            run(thread)

    threading.Thread.run = recorded_run
    try:
        with recorder:
            yield recorder.calls
    finally:
        threading.Thread.run = run
