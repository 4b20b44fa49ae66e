"""What each drafter does, in one line, and how fast it measured against plain decoding.

The speeds are total-time ratios from `eval.bench.drafters` (Whisper base, the 12 shared clips, 8 draft tokens, a
2-core CPU), kept in app/measured.json by the README's benchmark run: they hold for a CPU server, not for a GPU."""

from __future__ import annotations

from asr_specdec.core.modes import modes_for

from .measured import DRAFTERS, measured_here

EXPLANATIONS = {
    "off": "plain greedy decoding by the main model alone: the reference every other drafter reproduces exactly",
    "quantized-self": "the main model's own int8 copy drafts and the full model verifies: cheap, and it agrees "
                      "almost always",
    "prompt-lookup": "no model: proposes what followed the latest words earlier in the transcript; pays off on "
                     "repetitive speech",
    "assistant": "another Whisper with the same tokenizer drafts; it pays with a smaller one, but the offline "
                 "packs pair each model only with itself (measured: base drafting for base)",
    "early-exit": "the main model's first decoder layers draft; Whisper's early layers are not trained to "
                  "predict, so almost nothing is accepted",
    "universal": "a Whisper with another tokenizer drafts (tiny.en for base); drafts cross over as text and it "
                 "runs its own encoder too",
}
CPU_SPEEDUPS = DRAFTERS
MEASURED_ON = "Whisper base on a 2-core CPU"


def measured_speedup(mode: str, device: str) -> float | None:
    return CPU_SPEEDUPS.get(mode) if measured_here(device) else None


def mode_label(mode: str, device: str) -> str:
    """The name shown in the drafter list, with its measured speed where there is one."""
    speedup = measured_speedup(mode, device)
    if speedup is None or mode == "off":
        return mode
    return f"{mode} ({speedup:.2f}x{', slower' if speedup < 1 else ''})"


def mode_choices(device: str) -> list[tuple[str, str]]:
    """The drafters that run on `device` (no int8 self-drafter on a GPU)."""
    return [(mode_label(mode, device), mode) for mode in modes_for(device)]


def mode_help(mode: str, device: str) -> str:
    """One line under the drafter list: what it does, and how fast it measured (or that it was not)."""
    speedup = measured_speedup(mode, device)
    if mode == "off":
        speed = ""
    elif speedup is None:
        speed = " Not measured on this device: try the Compare tab."
    elif speedup < 1:
        speed = f" Slower than off: {speedup:.2f}x plain speed measured ({MEASURED_ON})."
    else:
        speed = f" {speedup:.2f}x plain speed measured ({MEASURED_ON})."
    return f"{EXPLANATIONS[mode][0].upper()}{EXPLANATIONS[mode][1:]}.{speed}"


def guide_markdown(device: str) -> str:
    """Every drafter with its explanation and measured speed, as a Markdown list (a table is too wide for a
    phone)."""
    lines = []
    for mode in modes_for(device):
        speedup = measured_speedup(mode, device)
        speed = "" if mode == "off" or speedup is None else f" ({speedup:.2f}x{', slower' if speedup < 1 else ''})"
        lines.append(f"- **{mode}**{speed}: {EXPLANATIONS[mode]}")
    measured = (f"Speeds vs off measured with {MEASURED_ON} (`python -m eval.bench.drafters`)" if device == "cpu"
                else "Speeds not measured on this device")
    note = f"{measured}; every drafter gives exactly the text of off. The Compare tab measures your own audio."
    return "\n".join(lines) + "\n\n" + note
