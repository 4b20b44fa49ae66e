"""The Whisper drafters, one module each, all behind `core.drafter.Drafter` (prompt lookup, which needs no model,
lives in core)."""

from .assistant import AssistantDrafter
from .early_exit import EarlyExitDrafter
from .quantized_self import QuantizedSelfDrafter
from .universal import UniversalDrafter

__all__ = ["AssistantDrafter", "EarlyExitDrafter", "QuantizedSelfDrafter", "UniversalDrafter"]
