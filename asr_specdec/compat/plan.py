"""faster-whisper's `transcribe` arguments mapped, once, onto SpeculativeWhisper's: the clips to decode, the
suppressed tokens, what is refused. Pure functions over the arguments; nothing here decodes."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecdecError


class UnsupportedOption(SpecdecError, NotImplementedError):
    """A faster-whisper option this drop-in cannot honour: refused with its name, never accepted and ignored."""


@dataclass(frozen=True)
class Arguments:
    """A transcribe call's arguments under faster-whisper's names, typed; their defaults are the two signatures'
    (WhisperModel.transcribe and BatchedInferencePipeline.transcribe keep faster-whisper's text)."""

    language: str | None
    task: str
    log_progress: bool
    beam_size: int
    best_of: int
    patience: float
    length_penalty: float
    repetition_penalty: float
    no_repeat_ngram_size: int
    temperature: float | list[float] | tuple[float, ...]
    compression_ratio_threshold: float | None
    log_prob_threshold: float | None
    no_speech_threshold: float | None
    condition_on_previous_text: bool
    prompt_reset_on_temperature: float
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
    vad_filter: bool
    vad_parameters: object
    max_new_tokens: int | None
    chunk_length: int | None
    clip_timestamps: object
    hallucination_silence_threshold: float | None
    hotwords: str | None
    language_detection_threshold: float | None
    language_detection_segments: int
    diarize: bool | int | None


def search_options(beam_size: int, patience: float, length_penalty: float) -> dict:
    """The beam-search options for SpeculativeWhisper.transcribe, with faster-whisper's meaning: CTranslate2's
    algorithm (core/beam_ctranslate2.py: its candidates, finished hypotheses, patience and sum / length **
    length_penalty ranking); beam_size=1 is greedy search (CTranslate2 decodes one beam greedily), where patience
    and length_penalty change nothing."""
    if beam_size < 1:
        raise SpecdecError(f"beam_size must be at least 1, not {beam_size}")
    if beam_size == 1:
        return {}
    if patience <= 0:
        raise SpecdecError(f"patience must be positive, not {patience}")
    return {"beam_size": beam_size, "patience": patience, "length_penalty": length_penalty,
            "beam_algorithm": "ctranslate2"}


def hallucination_option(threshold: float | None, word_timestamps: bool, vad_filter: bool, batched: bool) -> dict:
    """`hallucination_silence_threshold` for SpeculativeWhisper.transcribe: honoured where faster-whisper applies it
    (WhisperModel with word_timestamps=True); where faster-whisper would drop it silently (no word timestamps, the
    batched pipeline), refused by name (with vad_filter the joined speech is decoded sequentially, as there)."""
    if threshold is None:
        return {}
    if batched:
        raise UnsupportedOption("hallucination_silence_threshold is not applied by the batched pipeline (faster-"
                                "whisper sets it to None there): leave it at None or use WhisperModel.transcribe")
    if not word_timestamps:
        raise UnsupportedOption("hallucination_silence_threshold works with word_timestamps=True only (faster-whisper "
                                "ignores it otherwise): set word_timestamps=True or leave it at None")
    return {"hallucination_silence_threshold": threshold}


def temperatures(temperature) -> tuple[float, ...]:
    return tuple(float(value) for value in temperature) if isinstance(temperature, (list, tuple)) \
        else (float(temperature),)


def suppressed_tokens(suppress_tokens, default: tuple[int, ...], special: tuple[int, ...]) -> tuple[int, ...]:
    """faster-whisper's rule: -1 stands for the model's non-speech symbols (here its generation config's list);
    a list also suppresses the special tokens; None or an empty list suppresses nothing."""
    if not suppress_tokens:
        return ()
    ids = {int(token) for token in suppress_tokens if int(token) >= 0} | set(special)
    if -1 in suppress_tokens:
        ids |= set(default)
    return tuple(sorted(ids))


def clip_ranges(clip_timestamps, duration: float) -> list[tuple[float, float]] | None:
    """(start, end) seconds of each clip to decode, from "start,end,start,..." (the last end defaults to the end of
    the audio), a list of such numbers, or a list of {"start", "end"} dicts; None for the whole audio ("0")."""
    if clip_timestamps is None or clip_timestamps == "0":
        return None
    if isinstance(clip_timestamps, str):
        try:
            points = [float(value) for value in clip_timestamps.split(",") if value.strip()]
        except ValueError:
            raise SpecdecError(f"clip_timestamps must be numbers separated by commas, not '{clip_timestamps}'") \
                from None
    elif all(isinstance(clip, dict) for clip in clip_timestamps):
        points = [float(value) for clip in clip_timestamps for value in (clip["start"], clip["end"])]
    else:
        points = [float(value) for value in clip_timestamps]
    if len(points) % 2:
        points.append(duration)
    clips = [(max(0.0, start), min(end, duration)) for start, end in zip(points[::2], points[1::2])]
    for start, end in clips:
        if end < start:
            raise SpecdecError(f"clip_timestamps: a clip ends ({end} s) before it starts ({start} s)")
    if clips == [(0.0, duration)]:
        return None
    return [(start, end) for start, end in clips if end > start]


def diarize_option(diarize: bool | int | None, batched: bool, clip_timestamps) -> dict:
    """This build's `diarize` extra for SpeculativeWhisper.transcribe: speakers on the whole file's segments, so
    refused by name for the batched pipeline (independent clips) and for clip_timestamps."""
    if diarize is None or diarize is False:
        return {}
    if batched:
        raise UnsupportedOption("diarize is not available in BatchedInferencePipeline (its clips are decoded "
                                "apart): use WhisperModel.transcribe(..., diarize=...)")
    if clip_timestamps not in ("0", [0], [0.0], None):
        raise UnsupportedOption("diarize labels the whole file: it cannot be combined with clip_timestamps")
    return {"diarize": diarize}
