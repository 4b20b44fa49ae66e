"""The drafting modes, by name: the same six for Whisper and for text LMs. Imports nothing, so that command lines
can offer them without loading torch."""

MODES = ("off", "assistant", "quantized-self", "early-exit", "prompt-lookup", "universal")
# modes whose drafter is a second model the user names
ASSISTANT_MODES = ("assistant", "universal")


def default_mode(device: str = "cpu", assistant: bool = False) -> str:
    """The project's default drafter, the one place that decides it: the assistant when one is given, else the
    main model's int8 self on a CPU (where it runs, and the fastest drafter measured there), else none."""
    if assistant:
        return "assistant"
    return "quantized-self" if str(device) == "cpu" else "off"
