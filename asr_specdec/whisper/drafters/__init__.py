"""The Whisper drafters, one module each, all behind `core.drafter.Drafter`. A drafter module names its mode
(`MODE`, one of core.modes.MODES) and builds its drafter from a DrafterContext (`build(context)`): it is found
here by that, so adding a drafter is its module and its name in core/modes.py."""

import importlib
import pkgutil

from .assistant import AssistantDrafter
from .context import DrafterContext
from .early_exit import EarlyExitDrafter
from .quantized_self import QuantizedSelfDrafter
from .universal import UniversalDrafter

__all__ = ["AssistantDrafter", "DrafterContext", "EarlyExitDrafter", "QuantizedSelfDrafter", "UniversalDrafter",
           "BUILDERS", "build_drafter"]

# mode -> build(context), from every module of this package that names a MODE
BUILDERS = {module.MODE: module.build for module in (importlib.import_module(f"{__name__}.{info.name}")
                                                      for info in pkgutil.iter_modules(__path__))
            if hasattr(module, "MODE")}


def build_drafter(mode: str, context: DrafterContext):
    """The drafter of `mode` (None for "off": plain decoding)."""
    return None if mode == "off" else BUILDERS[mode](context)
