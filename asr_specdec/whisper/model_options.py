"""What a SpeculativeWhisper is made of, in one frozen value: the main model, the drafter and how it drafts, where
and at which precision they run. How to transcribe is options.py's TranscribeOptions; the two together build a
transcriber (`SpeculativeWhisper.from_options`), and a variant of either is `dataclasses.replace`."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.draft_length import DEFAULT_DRAFT_TOKENS, DraftLength
from ..core.drafter import Drafter
from ..core.limits import LIMITS
from ..core.modes import MODES, default_drafter
from ..errors import OptionError, SpecdecError
from .runtime.compute import ComputeType

DEFAULT_SCHEDULE = "adaptive"


@dataclass(frozen=True)
class ModelOptions:
    # a model name or directory (offline pack, CTranslate2, transformers, hub id), or a loaded model: a
    # LoadedWhisper, a (model, processor) pair, or a model with `processor` below
    main: object = "base"
    processor: object = None  # the main model's processor, when `main` is a bare model object
    # the drafter (core/modes.py); None: the assistant's mode when one is given, else the project's default for the
    # device and the main decoder's precision (core.modes.default_drafter)
    mode: str | None = None
    drafter: Drafter | None = None  # a ready drafter object; it decides the mode
    assistant: object = None  # the drafting model of modes assistant/universal (spec or loaded, as `main`)
    assistant_tokenizer: object = None  # universal mode's drafter tokenizer, when the assistant is a bare model
    num_draft_tokens: int = DEFAULT_DRAFT_TOKENS  # the first round's draft length (every round's when fixed)
    draft_schedule: str = DEFAULT_SCHEDULE  # adaptive, fixed, heuristic (or transformers' schedule names)
    confidence_threshold: float = 0.0  # a draft stops where the drafter's top probability falls below this
    early_exit_layer: int | None = None  # decoder layers the early-exit drafter runs; None: half of them
    device: str | None = None  # None: where a given model object is, else the CPU
    compute_type: str | ComputeType | None = None  # see compute.py; None: "auto" for the device

    def __post_init__(self):
        if self.mode is not None and self.mode not in MODES:
            raise SpecdecError(f"unknown mode '{self.mode}': choose one of {', '.join(MODES)}")
        tokenizer = self.assistant_tokenizer
        if isinstance(tokenizer, str):  # a name: the tokenizer object is what the drafter translates with
            raise OptionError("assistant_tokenizer", f"{{assistant_tokenizer}} must be a tokenizer object (the "
                                                     f"assistant's transformers tokenizer), not {tokenizer!r}; a model "
                                                     f"given by name as the assistant brings its own")
        LIMITS.check("num_draft_tokens", self.num_draft_tokens)
        self.draft_length()  # raises on a bad schedule

    def draft_length(self) -> DraftLength:
        """A fresh draft-length schedule from these options."""
        try:
            return DraftLength(self.num_draft_tokens, schedule=self.draft_schedule)
        except OptionError:
            raise
        except ValueError as error:
            raise SpecdecError(str(error)) from None

    def resolved_drafter(self, device: str, decoder_precision: str = "float32") -> tuple[str, str]:
        """(mode, why): the drafter object's, the one asked for, the assistant's, else the project's default on
        `device` for a main decoder computed at `decoder_precision` (core.modes.default_drafter)."""
        if self.drafter is not None:
            return self.drafter.name, "a drafter object is given"
        if self.mode is not None:
            return self.mode, "asked for"
        if self.assistant is not None:
            if self.assistant_tokenizer is not None:
                return "universal", "an assistant with its own tokenizer is given"
            return default_drafter(device, assistant=True)
        return default_drafter(device, decoder_precision=decoder_precision)
