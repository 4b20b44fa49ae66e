"""How many package files one `transcribe` call runs through, traced (issue 36 asked for at most 15; the bound here
is today's count, so the path cannot grow unnoticed), and that the call asks native/ nothing but how many threads
to take (the hardware is decided when the model loads; the CPU share it gets, native/threads.py, changes while it
runs)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "asr_specdec"
# files the default call touches today (issue 36's target was 15; docs/architecture.md lists them and their jobs)
BOUND = 25  # issue 48: at most 25
PER_CALL_NATIVE = {"native/threads.py"}  # the one thing about the hardware that is decided while a call runs
# where the default's encoder is int8 (the AVX2 build; AVX-512 with AMX tiles), a call on audio it encoded before
# projects the decoder's cross-attention states by the encoder's int8 products and lets the encoder's pages go at its
# end: both are the encoder's own module, which the other defaults' calls on that audio do not run
INT8_ENCODER = {"whisper/runtime/encoder.py"}


def files_run_by(call) -> set[str]:
    """The package's source files in which `call()` runs a function."""
    seen: set[str] = set()

    def profile(frame, event, _):
        if event == "call" and frame.f_code.co_filename.startswith(str(PACKAGE)):
            seen.add(str(Path(frame.f_code.co_filename).relative_to(PACKAGE)))

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.slow
def test_one_transcribe_call_runs_through_at_most_bound_files():
    from asr_specdec import SpeculativeWhisper

    whisper = SpeculativeWhisper("base", language="en")
    clip = str(PACKAGE.parent / "samples" / "message.wav")
    first = whisper.transcribe(clip)  # loading, packing and first-call caches are not the call's path
    files = files_run_by(lambda: whisper.transcribe(clip))
    assert "whisper/transcriber.py" in files and "core/engine.py" in files  # the tracer sees the package
    counted = files - INT8_ENCODER if first.compute_type.startswith("int8:") else files
    assert len(counted) <= BOUND, sorted(files)
    assert not [name for name in files if name.startswith("native/") and name not in PER_CALL_NATIVE], sorted(files)
