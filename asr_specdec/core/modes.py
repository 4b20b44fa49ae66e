"""The drafting modes, by name: the same six for Whisper and for text LMs. Imports nothing, so that command lines
can offer them without loading torch."""

MODES = ("off", "assistant", "quantized-self", "early-exit", "prompt-lookup", "universal")
# modes whose drafter is a second model the user names
ASSISTANT_MODES = ("assistant", "universal")
