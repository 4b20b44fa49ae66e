"""One module per drafting idea, all behind `Drafter` (see base.py)."""

from .assistant import AssistantDrafter
from .base import Draft, DraftContext, Drafter
from .early_exit import EarlyExitDrafter
from .prompt_lookup import PromptLookupDrafter
from .quantized_self import QuantizedSelfDrafter
from .universal import UniversalDrafter

MODES = ("off", "assistant", "quantized-self", "early-exit", "prompt-lookup", "universal")

__all__ = ["MODES", "AssistantDrafter", "Draft", "DraftContext", "Drafter", "EarlyExitDrafter",
           "PromptLookupDrafter", "QuantizedSelfDrafter", "UniversalDrafter"]
