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


def default_drafter(device: str = "cpu", assistant: bool = False, decoder_precision: str = "float32"
                    ) -> tuple[str, str]:
    """(mode, why): the project's default drafter, the one place that decides it. The assistant when one is given;
    else the main model's int8 self where it runs (a CPU) and the main decoder (computed at `decoder_precision`) is
    wider than int8, the fastest drafter measured there; else none. A decoder step reads its weights once, so it
    costs about their bytes: an int8 copy of an int8 decoder reads as many as the main step and drafts no cheaper,
    with or without a dot-product instruction (measured: docs/compute.md, "The default mode of an int8 decoder")."""
    if assistant:
        return "assistant", "an assistant model is given"
    if check_mode_on("quantized-self", device) is not None:
        return "off", "no assistant given, and quantized-self runs on the CPU only"
    if decoder_precision == "int8":
        return "off", ("no assistant given, and the int8 main decoder's own int8 copy would draft no cheaper than "
                       "it steps (both read the same int8 weights)")
    return "quantized-self", "the main model's own int8 copy drafts: the fastest drafter measured on a CPU"

