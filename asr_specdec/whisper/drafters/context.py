"""What a drafter module is given to build its drafter from (`build(context)`): the main model, the options, and
a way to load the assistant the options name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from ...errors import SpecdecError
from ..model_options import ModelOptions
from .assistant import check_same_device


@dataclass
class DrafterContext:
    main: nn.Module  # the main Whisper model
    main_tokenizer: object  # its tokenizer
    weights: str  # the storage format of the main decoder's linear layers (a drafter sharing them matches it)
    decoder_layers: int  # the main decoder's layer count
    options: ModelOptions
    language: str | None
    task: str
    load: Callable[[object], tuple[nn.Module, object, str]]  # a model spec -> (model, processor, name)
    assistant_name: str | None = None  # set once the assistant is loaded

    def assistant(self) -> tuple[nn.Module, object]:
        """The assistant the options name, loaded beside the main model: (model, processor)."""
        if self.options.assistant is None:
            mode = self.options.mode or "assistant"
            raise SpecdecError(f"mode '{mode}' needs an assistant model (--assistant / assistant_model=)")
        model, processor, self.assistant_name = self.load(self.options.assistant)
        check_same_device(self.main, model)
        return model, processor
