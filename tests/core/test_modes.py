"""The project's default drafter, decided in one place (core/modes.py) and taken by the library as by the commands."""

from __future__ import annotations

import pytest

from asr_specdec.core.modes import MODES, default_drafter


def test_the_default_drafter_is_the_int8_self_on_a_cpu_and_none_on_a_gpu():
    assert default_drafter("cpu")[0] == "quantized-self" and default_drafter()[0] == "quantized-self"
    assert default_drafter("cuda")[0] == "off" and default_drafter("cuda:1")[0] == "off"
    assert default_drafter("cpu", assistant=True)[0] == "assistant" == default_drafter("cuda", assistant=True)[0]
    assert {default_drafter("cpu")[0], default_drafter("cuda")[0]} <= set(MODES)


def test_no_self_drafting_of_an_int8_main_decoder():
    """An int8 copy of an int8 decoder reads the same weight bytes a step: it would draft no cheaper."""
    mode, why = default_drafter("cpu", decoder_precision="int8")
    assert mode == "off" and "no cheaper" in why
    assert [default_drafter("cpu", decoder_precision=p)[0] for p in ("float32", "bfloat16")] == ["quantized-self"] * 2
    assert default_drafter("cpu", assistant=True, decoder_precision="int8")[0] == "assistant"
    assert default_drafter("cuda", decoder_precision="int8")[1].endswith("CPU only")


def test_speculative_whisper_alone_takes_the_projects_default(tmp_path):
    from asr_specdec import SpeculativeWhisper
    from tests.tiny_ct2 import converted_whisper

    tiny_pair = converted_whisper(tmp_path, 0)
    assert SpeculativeWhisper(tiny_pair).mode == default_drafter("cpu")[0] == "quantized-self"
    assert SpeculativeWhisper(tiny_pair, mode="off").mode == "off"


def test_the_default_follows_the_main_decoders_precision(tmp_path):
    """With an int8 main decoder the default decodes plainly and builds no drafter; a float32 decoder keeps the int8
    self; a mode asked for is kept either way."""
    from asr_specdec import SpeculativeWhisper
    from asr_specdec.native import capabilities
    from tests.tiny_ct2 import converted_whisper

    if capabilities().isa == "none":
        pytest.skip("no native kernels: no int8 decoder here")
    tiny = converted_whisper(tmp_path, 0)
    int8 = SpeculativeWhisper(tiny, compute_type="int8")
    assert int8.compute_type.decoder == "int8"
    assert int8.mode == "off" and int8.drafter is None and "no cheaper" in int8.mode_reason
    assert SpeculativeWhisper(tiny, compute_type="float32").mode == "quantized-self"
    assert SpeculativeWhisper(tiny, compute_type="int8", mode="quantized-self").mode == "quantized-self"
