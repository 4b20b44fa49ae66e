"""app/drafter_guide.py and app/languages.py: each drafter explained with its measured speed (slower ones say
so), languages by name, translation only where the model can."""

from __future__ import annotations

import pytest

from app.drafter_guide import CPU_SPEEDUPS, EXPLANATIONS, guide_markdown, mode_choices, mode_help
from app.languages import language_choices, language_name, task_choices
from app.measured import BUILD
from asr_specdec.core.modes import MODES


def described_as(description: str):
    """This machine's capabilities as a build that `description` names ("native avx2", "pytorch", ...)."""
    from dataclasses import replace

    from asr_specdec.native import capabilities

    if description == "pytorch":
        return replace(capabilities(), isa="none")
    return replace(capabilities(), isa=description.split()[1].rstrip(","), threaded="single" not in description,
                   int8_tiles="+ AMX" in description)


@pytest.fixture
def measured_build(monkeypatch):
    """This CPU runs the kernel build the figures were measured on (whatever this machine's build is)."""
    import asr_specdec.native as native

    described = described_as(BUILD)
    monkeypatch.setattr(native, "capabilities", lambda: described)


def test_every_drafter_is_explained_and_its_cpu_speed_shown(measured_build):
    assert set(EXPLANATIONS) == set(CPU_SPEEDUPS) == set(MODES)
    labels = dict((value, label) for label, value in mode_choices("cpu"))
    assert labels["off"] == "off"
    for mode in set(MODES) - {"off"}:
        speedup = CPU_SPEEDUPS[mode]
        assert labels[mode] == f"{mode} ({speedup:.2f}x{', slower' if speedup < 1 else ''})"
    guide = guide_markdown("cpu")
    assert "- **off**: plain greedy decoding" in guide
    assert all(f"**{mode}** ({CPU_SPEEDUPS[mode]:.2f}x" in guide for mode in MODES if mode != "off")
    assert all(EXPLANATIONS[mode] in guide for mode in MODES)


def test_drafters_measured_slower_than_off_say_so(measured_build):
    for mode, speedup in CPU_SPEEDUPS.items():
        help_line = mode_help(mode, "cpu")
        assert ("Slower than off" in help_line) == (speedup < 1), help_line


def test_a_cpu_on_another_kernel_build_gets_no_figures_of_this_one(monkeypatch):
    import asr_specdec.native as native
    from app.compute_guide import compute_help

    other = described_as("pytorch" if BUILD != "pytorch" else "native avx2")
    monkeypatch.setattr(native, "capabilities", lambda: other)
    assert "Not measured on this device" in mode_help("quantized-self", "cpu")
    assert "x)" not in guide_markdown("cpu") and "Not measured" in compute_help("int8", "cpu")


def test_on_a_gpu_no_cpu_measurement_is_claimed():
    assert dict((value, label) for label, value in mode_choices("cuda"))["early-exit"] == "early-exit"
    assert "Not measured on this device" in mode_help("quantized-self", "cuda")
    assert "x)" not in guide_markdown("cuda") and "not measured on this device" in guide_markdown("cuda")


def test_languages_by_name_and_english_only_models_offer_english_alone():
    assert language_name("de") == "German" and language_name("haw") == "Hawaiian" and language_name(None) == "unknown"
    choices = language_choices(("en", "de", "zh"))
    assert choices == [("Detect automatically", "auto"), ("Chinese (zh)", "zh"), ("English (en)", "en"),
                       ("German (de)", "de")]
    assert language_choices(()) == [("English", "en")]


def test_translation_needs_a_multilingual_model():
    assert [value for _, value in task_choices(True)] == ["transcribe", "translate"]
    assert [value for _, value in task_choices(False)] == ["transcribe"]


def test_compute_types_offered_follow_the_hardware_and_say_how_they_measured(measured_build):
    from app.compute_guide import compute_choices, compute_help

    on_cpu = [value for _, value in compute_choices("cpu", native=True)]
    assert on_cpu[0] == "auto" and "int8" in on_cpu and "float16" not in on_cpu
    assert [value for _, value in compute_choices("cpu", native=False)] == ["auto", "float32", "int8:float32",
                                                                              "bfloat16:float32"]
    assert "float16" in [value for _, value in compute_choices("cuda", native=True)]
    assert "12 test clips" in compute_help("int8", "cpu") and "Not measured" in compute_help("float16", "cuda")
