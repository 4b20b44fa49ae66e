"""What the server offers and allows (fixed at start-up) and what one request asks for."""

from __future__ import annotations

from dataclasses import dataclass, field

from asr_specdec.core.draft_length import DEFAULT_DRAFT_TOKENS
from asr_specdec.core.limits import LIMITS, OptionLimits
from asr_specdec.core.modes import ASSISTANT_MODES


@dataclass(frozen=True)
class AppSettings:
    models: tuple[str, ...]  # the only model specs a client may choose: a client never names a path
    default_main: str = "base"
    default_assistant: str = "tiny.en"
    # None: the project's for the default main model, read from it once loaded (TranscriptionService.load_defaults;
    # core.modes.default_drafter decides it from the device and the main decoder's precision)
    default_mode: str | None = None
    max_upload_mb: float = 25.0
    max_audio_seconds: float = 600.0
    device: str = "cpu"
    # the most a request may ask for; the page's controls take their ranges from it (the options' own by default)
    limits: OptionLimits = field(default_factory=lambda: LIMITS)

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)


@dataclass(frozen=True)
class DecodeOptions:
    main: str
    mode: str | None = None  # None: the project's default for this main model (the transcriber decides it)
    assistant: str | None = None
    draft_tokens: int = DEFAULT_DRAFT_TOKENS
    dynamic: bool = False
    language: str | None = None  # None: detected by multilingual models
    task: str = "transcribe"
    compute_type: str = "auto"

    def normalized(self) -> DecodeOptions:
        """The same request with the settings its mode ignores blanked, so equal decoders share one cache key."""
        assistant = self.assistant if self.mode in ASSISTANT_MODES else None
        if self.mode == "off":
            return DecodeOptions(self.main, "off", None, DEFAULT_DRAFT_TOKENS, False, self.language, self.task,
                                 self.compute_type)
        return DecodeOptions(self.main, self.mode, assistant, int(self.draft_tokens), bool(self.dynamic),
                             self.language, self.task, self.compute_type)

    # the page's choices mapped into the Whisper adapter's two options objects, here at the app's edge
    def model_options(self, main, assistant, device: str):
        """ModelOptions of this request, on the loaded `main` (and `assistant`, for the modes that draft with one)."""
        from asr_specdec.whisper.model_options import ModelOptions

        return ModelOptions(main=main, mode=self.mode, assistant=assistant, num_draft_tokens=self.draft_tokens,
                            draft_schedule="heuristic" if self.dynamic else ModelOptions.draft_schedule,
                            device=device, compute_type=None if self.compute_type == "auto" else self.compute_type)

    def transcribe_options(self):
        """TranscribeOptions of this request (the recipe's per-call choices are RecipeChoices)."""
        from asr_specdec.whisper.options import TranscribeOptions

        return TranscribeOptions(language=self.language, task=self.task)


@dataclass(frozen=True)
class RecipeChoices:
    """The per-call parts of Whisper's recipe the page offers (they do not change which decoder is used)."""
    word_timestamps: bool = False
    vad_filter: bool = False
    initial_prompt: str = ""
    hotwords: str = ""
    beam_size: int = 0  # beam search with this many beams; 0: greedy
    repetition_penalty: float = 1.0  # a repeated token's logit divided by it (CTranslate2's); 1: off
    no_repeat_ngram_size: int = 0  # no n-gram of this size twice in a window's text; 0: off
    speakers: str = "off"  # who spoke when: "off", "estimate", or how many people speak

    def as_arguments(self) -> dict:
        """Keyword arguments of SpeculativeWhisper.transcribe; empty texts and the options left off are left out (the
        library checks the ranges, so a bad value reaches the page as its one-line message)."""
        arguments = {"word_timestamps": self.word_timestamps, "vad_filter": self.vad_filter}
        if self.initial_prompt.strip():
            arguments["initial_prompt"] = self.initial_prompt.strip()
        if self.hotwords.strip():
            arguments["hotwords"] = self.hotwords.strip()
        if self.beam_size > 0:
            arguments["beam_size"] = self.beam_size
        if self.repetition_penalty != RecipeChoices.repetition_penalty:
            arguments["repetition_penalty"] = self.repetition_penalty
        if self.no_repeat_ngram_size != RecipeChoices.no_repeat_ngram_size:
            arguments["no_repeat_ngram_size"] = self.no_repeat_ngram_size
        speakers = str(self.speakers).strip().lower()
        if speakers not in ("off", ""):
            arguments["diarize"] = True if speakers == "estimate" else _speaker_count(speakers)
        return arguments


def _speaker_count(text: str) -> int:
    """A number of speakers (its range is the options': a bad one reaches the page as their one-line message)."""
    from asr_specdec.errors import SpecdecError

    if not text.lstrip("-").isdigit():
        raise SpecdecError(f"Speakers: choose off, estimate or a number of people, not '{text}'")
    return int(text)
