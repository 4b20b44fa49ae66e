"""The multipart forms of /v1/audio/transcriptions and /v1/audio/translations, as OpenAI defines them, validated
at the edge into one `AudioRequest`. Extra fields (`mode`, `num_draft_tokens`, and the decoding options
`beam_size`, `patience`, `length_penalty`, `best_of`, `hallucination_silence_threshold`, `repetition_penalty`,
`no_repeat_ngram_size`, `chunk_length`, as faster-whisper-based servers take them; `diarize`: speakers on the
segments, "true" for an estimated count or a number of speakers) are this server's own; OpenAI
clients send them through `extra_body`. What depends on the loaded model (model name, language, mode) is checked by
the service."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, File, Form, UploadFile

from .errors import ApiError

RESPONSE_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
GRANULARITIES = ("segment", "word")
# the request's fields that are TranscribeOptions' (and its Recipe's) options, under the same names
DECODING = ("beam_size", "patience", "length_penalty", "best_of", "hallucination_silence_threshold",
            "repetition_penalty", "no_repeat_ngram_size", "chunk_length")


@dataclass(frozen=True)
class AudioRequest:
    audio: bytes
    filename: str | None
    model: str
    task: str  # transcribe | translate
    language: str | None = None
    prompt: str | None = None
    response_format: str = "json"
    temperature: float = 0.0
    granularities: tuple[str, ...] = ()
    stream: bool = False
    mode: str | None = None
    num_draft_tokens: int | None = None
    beam_size: int | None = None
    patience: float | None = None
    length_penalty: float | None = None
    best_of: int | None = None
    hallucination_silence_threshold: float | None = None
    repetition_penalty: float | None = None
    no_repeat_ngram_size: int | None = None
    chunk_length: int | None = None  # seconds of audio per window (faster-whisper's); None: 30
    diarize: bool | int | None = None  # speakers on the segments: True (estimated) or how many

    @property
    def timestamps(self) -> bool | None:
        """Timed segments are decoded where the answer shows them (and for audio over 30 s, as always)."""
        return True if self.stream or self.response_format in ("verbose_json", "srt", "vtt") else None

    @property
    def word_timestamps(self) -> bool:
        return "word" in self.granularities

    @property
    def decoding(self) -> dict:
        """The decoding options the request gives (the server's own defaults stand for the others)."""
        return {name: getattr(self, name) for name in (*DECODING, "diarize") if getattr(self, name) is not None}


async def transcription_request(
    file: Annotated[UploadFile, File()],
    model: Annotated[str, Form()],
    language: Annotated[str | None, Form()] = None,
    prompt: Annotated[str | None, Form()] = None,
    response_format: Annotated[str, Form()] = "json",
    temperature: Annotated[float, Form()] = 0.0,
    timestamp_granularities: Annotated[list[str] | None, Form(alias="timestamp_granularities[]")] = None,
    timestamp_granularities_plain: Annotated[list[str] | None, Form(alias="timestamp_granularities")] = None,
    stream: Annotated[bool, Form()] = False,
    mode: Annotated[str | None, Form()] = None,
    num_draft_tokens: Annotated[int | None, Form()] = None,
    beam_size: Annotated[int | None, Form()] = None,
    patience: Annotated[float | None, Form()] = None,
    length_penalty: Annotated[float | None, Form()] = None,
    best_of: Annotated[int | None, Form()] = None,
    hallucination_silence_threshold: Annotated[float | None, Form()] = None,
    repetition_penalty: Annotated[float | None, Form()] = None,
    no_repeat_ngram_size: Annotated[int | None, Form()] = None,
    chunk_length: Annotated[int | None, Form()] = None,
    diarize: Annotated[str | None, Form()] = None,
) -> AudioRequest:
    return await _validated(file, model=model, task="transcribe", diarize=_speakers(diarize), language=language,
                            prompt=prompt,
                            response_format=response_format, temperature=temperature,
                            granularities=(*(timestamp_granularities or ()), *(timestamp_granularities_plain or ())),
                            stream=stream, mode=mode, num_draft_tokens=num_draft_tokens, beam_size=beam_size,
                            patience=patience, length_penalty=length_penalty, best_of=best_of,
                            hallucination_silence_threshold=hallucination_silence_threshold,
                            repetition_penalty=repetition_penalty, no_repeat_ngram_size=no_repeat_ngram_size,
                            chunk_length=chunk_length)


async def translation_request(
    file: Annotated[UploadFile, File()],
    model: Annotated[str, Form()],
    prompt: Annotated[str | None, Form()] = None,
    response_format: Annotated[str, Form()] = "json",
    temperature: Annotated[float, Form()] = 0.0,
    stream: Annotated[bool, Form()] = False,
    mode: Annotated[str | None, Form()] = None,
    num_draft_tokens: Annotated[int | None, Form()] = None,
    beam_size: Annotated[int | None, Form()] = None,
    patience: Annotated[float | None, Form()] = None,
    length_penalty: Annotated[float | None, Form()] = None,
    best_of: Annotated[int | None, Form()] = None,
    repetition_penalty: Annotated[float | None, Form()] = None,
    no_repeat_ngram_size: Annotated[int | None, Form()] = None,
    chunk_length: Annotated[int | None, Form()] = None,
) -> AudioRequest:
    return await _validated(file, model=model, task="translate", prompt=prompt, response_format=response_format,
                            temperature=temperature, stream=stream, mode=mode, num_draft_tokens=num_draft_tokens,
                            beam_size=beam_size, patience=patience, length_penalty=length_penalty, best_of=best_of,
                            repetition_penalty=repetition_penalty, no_repeat_ngram_size=no_repeat_ngram_size,
                            chunk_length=chunk_length)


TranscriptionForm = Annotated[AudioRequest, Depends(transcription_request)]
TranslationForm = Annotated[AudioRequest, Depends(translation_request)]


async def _validated(file: UploadFile, **fields) -> AudioRequest:
    response_format = fields["response_format"]
    if response_format not in RESPONSE_FORMATS:
        raise ApiError(400, f"unsupported response_format '{response_format}': use one of "
                            f"{', '.join(RESPONSE_FORMATS)}", param="response_format", code="invalid_value")
    if not 0.0 <= fields["temperature"] <= 1.0:
        raise ApiError(400, "temperature must be between 0 and 1", param="temperature", code="invalid_value")
    for granularity in fields.get("granularities", ()):
        if granularity not in GRANULARITIES:
            raise ApiError(400, f"unknown timestamp granularity '{granularity}': use segment or word",
                           param="timestamp_granularities", code="invalid_value")
    if "word" in fields.get("granularities", ()) and response_format != "verbose_json":
        raise ApiError(400, "word timestamps come with response_format verbose_json",
                       param="timestamp_granularities", code="invalid_value")
    if fields.get("diarize") and response_format not in ("verbose_json", "srt", "vtt"):
        raise ApiError(400, "speakers are shown on segments: diarize needs response_format verbose_json, srt or vtt",
                       param="diarize", code="invalid_value")
    _check_decoding(fields)
    for name in ("language", "prompt", "mode"):
        if fields.get(name) is not None and not fields[name].strip():
            fields[name] = None
    try:
        audio = await file.read()
    finally:
        await file.close()
    if not audio:
        raise ApiError(400, "the uploaded file is empty (0 bytes)", param="file", code="empty_file")
    return AudioRequest(audio=audio, filename=file.filename, **fields)


def _speakers(diarize: str | None) -> bool | int | None:
    """The `diarize` field: true/false, or a number of speakers (1 to 32)."""
    text = (diarize or "").strip().lower()
    if text in ("", "false", "0", "off", "no"):
        return None
    if text in ("true", "on", "yes", "auto"):
        return True
    if text.isdigit() and 1 <= int(text) <= 32:
        return int(text)
    raise ApiError(400, f"diarize must be true, false or a number of speakers from 1 to 32, not '{diarize}'",
                   param="diarize", code="invalid_value")


# this server's caps on what one request may cost (the options objects allow more)
CAPS = {"beam_size": 16, "best_of": 16}


def _check_decoding(fields: dict) -> None:
    """400s for decoding options out of range: the server's caps here, the rest by building the options (an
    OptionError names its field: errors.from_exception)."""
    from ..whisper.arguments import recipe_arguments
    from ..whisper.options import TranscribeOptions

    for name, cap in CAPS.items():
        if fields.get(name) is not None and fields[name] > cap:
            raise ApiError(400, f"{name} must be at most {cap} on this server", param=name, code="invalid_value")
    threshold = fields.get("hallucination_silence_threshold")
    if threshold is not None and "word" not in fields.get("granularities", ()):
        raise ApiError(400, "hallucination_silence_threshold needs word timestamps (timestamp_granularities[]=word)",
                       param="hallucination_silence_threshold", code="invalid_value")
    TranscribeOptions().with_overrides(**recipe_arguments(None, {name: fields[name] for name in DECODING
                                                                if fields.get(name) is not None}))
