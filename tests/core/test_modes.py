"""The project's default drafter, decided in one place (core/modes.py) and taken by the library as by the commands."""

from __future__ import annotations

from dataclasses import replace

import pytest

from asr_specdec.core.modes import MODES, default_drafter


def test_the_default_drafter_is_the_int8_self_on_a_cpu_and_none_on_a_gpu():
    assert default_drafter("cpu")[0] == "quantized-self" and default_drafter()[0] == "quantized-self"
    assert default_drafter("cuda")[0] == "off" and default_drafter("cuda:1")[0] == "off"
    assert default_drafter("cpu", assistant=True)[0] == "assistant" == default_drafter("cuda", assistant=True)[0]
    assert {default_drafter("cpu")[0], default_drafter("cuda")[0]} <= set(MODES)


def test_no_self_drafting_where_the_int8_copy_steps_no_cheaper_than_the_main_decoder():
    mode, why = default_drafter("cpu", self_draft_cheaper=False)
    assert mode == "off" and "no cheaper" in why
    assert default_drafter("cpu", assistant=True, self_draft_cheaper=False)[0] == "assistant"
    assert default_drafter("cuda", self_draft_cheaper=False)[1].endswith("CPU only")


def test_the_native_build_says_where_an_int8_copy_drafts_cheaper():
    """A float decoder's int8 copy reads fewer bytes; an int8 decoder's copy is cheaper only by a dot product."""
    from asr_specdec.native import capabilities

    without, with_dot = (replace(capabilities(), int8_dot_product=flag) for flag in (False, True))
    assert [without.self_draft_cheaper(p) for p in ("float32", "bfloat16", "int8")] == [True, True, False]
    assert [with_dot.self_draft_cheaper(p) for p in ("float32", "bfloat16", "int8")] == [True, True, True]


def test_speculative_whisper_alone_takes_the_projects_default(tmp_path):
    from asr_specdec import SpeculativeWhisper
    from tests.tiny_ct2 import converted_whisper

    tiny_pair = converted_whisper(tmp_path, 0)
    assert SpeculativeWhisper(tiny_pair).mode == default_drafter("cpu")[0] == "quantized-self"
    assert SpeculativeWhisper(tiny_pair, mode="off").mode == "off"


@pytest.mark.parametrize("dot_product", [False, True])
def test_the_default_follows_the_main_decoders_arithmetic(tmp_path, monkeypatch, dot_product):
    """With an int8 main decoder the default drafts with the int8 self only where a dot product makes it cheaper;
    a float32 decoder keeps it; a mode asked for is kept either way."""
    import asr_specdec.whisper.transcriber as transcriber
    from asr_specdec import SpeculativeWhisper
    from asr_specdec.native import capabilities
    from tests.tiny_ct2 import converted_whisper

    if capabilities().isa == "none":
        pytest.skip("no native kernels: no int8 decoder here")
    real = capabilities()
    monkeypatch.setattr(transcriber, "capabilities", lambda: replace(real, int8_dot_product=dot_product))
    tiny = converted_whisper(tmp_path, 0)
    int8 = SpeculativeWhisper(tiny, compute_type="int8")
    assert int8.compute_type.decoder == "int8"
    assert int8.mode == ("quantized-self" if dot_product else "off")
    assert (int8.drafter is None) == (not dot_product)
    assert ("no cheaper" in int8.mode_reason) == (not dot_product)
    assert SpeculativeWhisper(tiny, compute_type="float32").mode == "quantized-self"
    assert SpeculativeWhisper(tiny, compute_type="int8", mode="quantized-self").mode == "quantized-self"
