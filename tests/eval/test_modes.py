"""Which modes an eval runs, and with which drafter, when the assistant does or does not share the main
model's tokenizer (no model is loaded: only their descriptions)."""

from __future__ import annotations

import pytest

from asr_specdec.core.modes import MODES
from eval.errors import EvalError
from eval.run import plan_modes

BASE = {"name": "base", "vocab_size": 51865}
TINY_EN = {"name": "tiny.en", "vocab_size": 51864}


def test_same_tokenizer_assistant_runs_every_mode():
    assert plan_modes(MODES, False, BASE, dict(BASE)) == (MODES, None, [])


def test_default_run_measures_assistant_mode_with_the_main_model_when_tokenizers_differ():
    modes, assistant_mode_model, notes = plan_modes(MODES, False, BASE, TINY_EN)
    assert modes == MODES and assistant_mode_model == "base"
    assert len(notes) == 1 and "51864 tokens and base 51865" in notes[0]


def test_without_an_assistant_universal_is_skipped():
    modes, assistant_mode_model, notes = plan_modes(MODES, False, BASE, None)
    assert "universal" not in modes and "assistant" in modes and assistant_mode_model == "base"
    assert any("universal skipped" in note for note in notes)


@pytest.mark.parametrize("assistant", [TINY_EN, None])
def test_a_mode_asked_for_by_name_is_refused_instead(assistant):
    with pytest.raises(EvalError, match="mode 'assistant' cannot run.*--assistant base"):
        plan_modes(("off", "assistant"), True, BASE, assistant)


def test_the_int8_self_drafter_is_left_out_on_a_gpu():
    from eval.run import drop_cpu_only_modes

    assert drop_cpu_only_modes(MODES, False, "cpu") == (MODES, [])
    modes, notes = drop_cpu_only_modes(MODES, False, "cuda")
    assert "quantized-self" not in modes and len(modes) == len(MODES) - 1 and "CPU only" in notes[0]
    with pytest.raises(EvalError, match="cannot run on cuda"):
        drop_cpu_only_modes(("off", "quantized-self"), True, "cuda")
