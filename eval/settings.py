"""What one eval run measures: the data, the models and the decoding variants, in one frozen record that
travels to every worker and is saved beside the rows so that `--resume` can refuse a different run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from asr_specdec.core.draft_length import DEFAULT_DRAFT_TOKENS
from asr_specdec.core.modes import MODES

PLAIN = "off"


def drafter_model(settings: EvalSettings, mode: str) -> str | None:
    """The model spec a mode drafts with (None for model-free or self-drafting modes)."""
    if mode == "assistant":
        return settings.assistant_mode_model or settings.assistant
    return settings.assistant if mode == "universal" else None


@dataclass(frozen=True)
class Variant:
    """One way of decoding: a mode, and its draft length (None for plain greedy)."""

    mode: str
    draft_tokens: int | None
    label: str


@dataclass(frozen=True)
class EvalSettings:
    dataset: str
    config: str | None = None
    split: str | None = None
    modes: tuple[str, ...] = MODES
    main: str = "base"
    assistant: str | None = "tiny.en"  # universal's drafter, and assistant mode's when the tokenizers match
    assistant_mode_model: str | None = None  # assistant mode's drafter, when it is not `assistant`
    draft_lengths: tuple[int, ...] = (DEFAULT_DRAFT_TOKENS,)
    early_exit_layer: int | None = None
    language: str | None = "en"
    do_sample: bool = False
    sampling_temperature: float = 1.0  # with do_sample (openai's temperature is the recipe's)
    seed: int = 0
    device: str = "cpu"
    threads: int | None = None
    warmup: bool = True
    plain_baseline: bool = True  # False for a transcription run: only the modes asked for
    # the transcription recipe's options (word timestamps, VAD, fallback, ...) as JSON; "" for the defaults
    recipe: str = ""

    def variants(self) -> list[Variant]:
        """Plain greedy first (the reference every other variant is compared with), then each mode at each
        draft length; labels carry the length only when several are swept."""
        variants = [Variant(PLAIN, None, PLAIN)] if self.plain_baseline or PLAIN in self.modes else []
        sweep = len(self.draft_lengths) > 1
        for mode in self.modes:
            if mode == PLAIN:
                continue
            for tokens in self.draft_lengths:
                variants.append(Variant(mode, tokens, f"{mode} k={tokens}" if sweep else mode))
        return variants

    def identity(self) -> dict:
        """The settings whose change makes earlier rows incomparable (not limit, threads or warm-up)."""
        ignored = {"threads", "warmup", "device"}
        values = asdict(self)
        return {field.name: _plain(values[field.name]) for field in fields(self) if field.name not in ignored}

    def as_dict(self) -> dict:
        return {name: _plain(value) for name, value in asdict(self).items()}


def _plain(value):
    return list(value) if isinstance(value, tuple) else value
