"""The project's default drafter, decided in one place (core/modes.py) and taken by the library as by the commands."""

from __future__ import annotations

from asr_specdec.core.modes import MODES, default_mode


def test_the_default_drafter_is_the_int8_self_on_a_cpu_and_none_on_a_gpu():
    assert default_mode("cpu") == "quantized-self" and default_mode() == "quantized-self"
    assert default_mode("cuda") == "off" and default_mode("cuda:1") == "off"
    assert default_mode("cpu", assistant=True) == "assistant" == default_mode("cuda", assistant=True)
    assert {default_mode("cpu"), default_mode("cuda")} <= set(MODES)


def test_speculative_whisper_alone_takes_the_projects_default(tmp_path):
    from asr_specdec import SpeculativeWhisper
    from tests.tiny_ct2 import converted_whisper

    tiny_pair = converted_whisper(tmp_path, 0)
    assert SpeculativeWhisper(tiny_pair).mode == default_mode("cpu") == "quantized-self"
    assert SpeculativeWhisper(tiny_pair, mode="off").mode == "off"
