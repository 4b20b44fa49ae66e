"""What faster-whisper 1.2's `transcribe` returns, field for field: `Segment`, `Word`, `TranscriptionInfo`, and the
`TranscriptionOptions` a transcription used. Plain dataclasses, so `dataclasses.asdict` works as it does there."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Word:
    start: float
    end: float
    word: str  # with its leading space, as Whisper writes it
    probability: float
    speaker: str | None = None  # this build's extra: with transcribe(diarize=...)


@dataclass
class Segment:
    id: int  # from 1, in the order the segments come
    seek: int  # where the segment starts, in feature frames (100 a second)
    start: float
    end: float
    text: str  # with Whisper's leading space: "".join(segment.text ...) reads right
    tokens: list[int]
    avg_logprob: float | None  # None where the window was not scored (no threshold asked for it)
    compression_ratio: float | None
    no_speech_prob: float | None
    words: list[Word] | None  # with word_timestamps=True
    temperature: float | None
    speaker: str | None = None  # this build's extra: with transcribe(diarize=...)


@dataclass(frozen=True)
class TranscriptionOptions:
    """The options a transcription ran with, under faster-whisper's names (`suppress_tokens` as token ids)."""

    beam_size: int
    best_of: int
    patience: float
    length_penalty: float
    repetition_penalty: float
    no_repeat_ngram_size: int
    log_prob_threshold: float | None
    no_speech_threshold: float | None
    compression_ratio_threshold: float | None
    condition_on_previous_text: bool
    prompt_reset_on_temperature: float
    temperatures: list[float]
    initial_prompt: str | list[int] | None
    prefix: str | None
    suppress_blank: bool
    suppress_tokens: list[int] | None
    without_timestamps: bool
    max_initial_timestamp: float
    word_timestamps: bool
    prepend_punctuations: str
    append_punctuations: str
    multilingual: bool
    max_new_tokens: int | None
    clip_timestamps: str | list
    hallucination_silence_threshold: float | None
    hotwords: str | None


@dataclass
class TranscriptionInfo:
    language: str
    language_probability: float
    duration: float
    duration_after_vad: float
    all_language_probs: list[tuple[str, float]] | None
    transcription_options: TranscriptionOptions
    vad_options: object | None  # whisper.vad.VadOptions when VAD ran
