"""The drafting modes, by name: the same six for Whisper and for text LMs. Imports nothing, so that command lines
can offer them without loading torch."""

MODES = ("off", "assistant", "quantized-self", "early-exit", "prompt-lookup", "universal")
# modes whose drafter is a second model the user names
ASSISTANT_MODES = ("assistant", "universal")
# modes whose drafter runs on the CPU only (torch's dynamic int8 quantization), and why
CPU_ONLY_MODES = ("quantized-self",)
CPU_ONLY_REASON = "its int8 copy of the decoder (torch's dynamic int8 quantization) runs on the CPU only"


def modes_for(device: str) -> tuple[str, ...]:
    """The modes that can run with the main model on `device` ("cpu", "cuda", "cuda:1", ...)."""
    on_cpu = str(device).startswith("cpu")
    return tuple(mode for mode in MODES if on_cpu or mode not in CPU_ONLY_MODES)


def check_mode_on(mode: str, device: str) -> str | None:
    """None when `mode` can run on `device`, else a one-line reason with what to use instead."""
    if mode in modes_for(device):
        return None
    return (f"mode '{mode}' cannot run on {device}: {CPU_ONLY_REASON}; on a GPU use assistant (with an "
            "assistant model), early-exit, prompt-lookup or off")


def default_drafter(device: str = "cpu", assistant: bool = False, self_draft_cheaper: bool = True
                    ) -> tuple[str, str]:
    """(mode, why): the project's default drafter, the one place that decides it. The assistant when one is given;
    else the main model's int8 self where it runs (a CPU) and drafts cheaper than the main model steps
    (`self_draft_cheaper`: the native build's call, native.Capabilities.self_draft_cheaper), the fastest drafter
    measured there; else none."""
    if assistant:
        return "assistant", "an assistant model is given"
    if check_mode_on("quantized-self", device) is not None:
        return "off", "no assistant given, and quantized-self runs on the CPU only"
    if not self_draft_cheaper:
        return "off", ("no assistant given, and the main decoder's int8 copy would draft no cheaper than it steps "
                       "(an int8 decoder on a CPU without an int8 dot-product instruction)")
    return "quantized-self", "the main model's own int8 copy drafts: the fastest drafter measured on a CPU"

