"""The multipart forms of /v1/audio/transcriptions and /v1/audio/translations, as OpenAI defines them, validated
at the edge into one `AudioRequest`. Extra fields (`mode`, `num_draft_tokens`, and the decoding options
`beam_size`, `patience`, `length_penalty`, `best_of`, `hallucination_silence_threshold`, `repetition_penalty`,
`no_repeat_ngram_size`, `chunk_length`, as faster-whisper-based servers take them; `diarize`: speakers on the
segments, "true" for an estimated count or a number of speakers) are this server's own; OpenAI
clients send them through `extra_body`. What depends on the loaded model (model name, language, mode) is checked by
the service."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, dataclass, fields, replace
from typing import Annotated, get_type_hints

from fastapi import Depends, File, Form, UploadFile

from ..whisper.arguments import call_options
from ..whisper.options import TranscribeOptions
from ..whisper.recipe.fallback import Recipe
from .errors import ApiError

RESPONSE_FORMATS = ("json", "text", "srt", "verbose_json", "vtt")
GRANULARITIES = ("segment", "word")


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
        """The transcription options the request gives under their own names (the server's defaults stand for the
        others)."""
        return {name: getattr(self, name) for name in DECODING if getattr(self, name) is not None}

    def options(self, base: TranscribeOptions) -> TranscribeOptions:
        """The request's TranscribeOptions: the server's `base` with what the request gives (OpenAI's temperature;
        above 0 one sample, as OpenAI's, unless the request asks for best_of); an option out of range raises
        OptionError naming its field."""
        return call_options(base, language=self.language, task=self.task, timestamps=self.timestamps,
                            temperature=self.temperature,
                            **({"word_timestamps": True} if self.word_timestamps else {}),
                            **({"best_of": 1} if self.temperature > 0 else {}), **self.decoding)


# the request's fields that are TranscribeOptions' (and its Recipe's) options, under the same names
DECODING = tuple(item.name for item in fields(AudioRequest)
                 if item.name in {*(option.name for option in fields(TranscribeOptions)),
                                  *(option.name for option in fields(Recipe))} - {"language", "task", "timestamps"})


# form fields only transcriptions take (a translation's language is English, its timing the segments')
TRANSCRIPTION_ONLY = ("language", "granularities", "hallucination_silence_threshold", "diarize")


def _form_parameters(task: str) -> list[inspect.Parameter]:
    """The endpoint's form fields: the upload, then AudioRequest's fields under their own names (the granularities
    under OpenAI's two spellings, the speakers as text), each with its type and default."""
    types = get_type_hints(AudioRequest)
    parameters = [inspect.Parameter("file", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[UploadFile, File()])]

    def form(name: str, annotation, default=inspect.Parameter.empty, alias: str | None = None) -> None:
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=Annotated[annotation, Form(alias=alias)]))

    for item in fields(AudioRequest):
        if item.name in ("audio", "filename", "task") or (task == "translate" and item.name in TRANSCRIPTION_ONLY):
            continue
        if item.name == "granularities":
            form("timestamp_granularities", list[str] | None, None, alias="timestamp_granularities[]")
            form("timestamp_granularities_plain", list[str] | None, None, alias="timestamp_granularities")
        elif item.name == "diarize":
            form("diarize", str | None, None)
        else:
            required = item.default is MISSING
            form(item.name, types[item.name], inspect.Parameter.empty if required else item.default)
    return parameters


def _form(task: str):
    """The FastAPI dependency that reads and validates one endpoint's form into an AudioRequest."""
    async def request(file: UploadFile, **given) -> AudioRequest:
        if "timestamp_granularities" in given:
            given["granularities"] = (*(given.pop("timestamp_granularities") or ()),
                                      *(given.pop("timestamp_granularities_plain") or ()))
        if "diarize" in given:
            given["diarize"] = _speakers(given["diarize"])
        return await _validated(file, task=task, **given)

    request.__signature__ = inspect.Signature(_form_parameters(task))
    request.__name__ = f"{task}_request"
    return request


transcription_request, translation_request = _form("transcribe"), _form("translate")
TranscriptionForm = Annotated[AudioRequest, Depends(transcription_request)]
TranslationForm = Annotated[AudioRequest, Depends(translation_request)]


async def _validated(file: UploadFile, **fields) -> AudioRequest:
    response_format = fields["response_format"]
    if response_format not in RESPONSE_FORMATS:
        raise ApiError(400, f"unsupported response_format '{response_format}': use one of "
                            f"{', '.join(RESPONSE_FORMATS)}", param="response_format", code="invalid_value")
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
    for name in ("language", "prompt", "mode"):
        if fields.get(name) is not None and not fields[name].strip():
            fields[name] = None
    request = AudioRequest(audio=b"", filename=file.filename, **fields)
    request.options(TranscribeOptions())  # an option out of range: OptionError, a 400 naming its field
    try:
        audio = await file.read()
    finally:
        await file.close()
    if not audio:
        raise ApiError(400, "the uploaded file is empty (0 bytes)", param="file", code="empty_file")
    return replace(request, audio=audio)


def _speakers(diarize: str | None) -> bool | int | None:
    """The `diarize` field: true/false, or a number of speakers (its range is the options')."""
    text = (diarize or "").strip().lower()
    if text in ("", "false", "0", "off", "no"):
        return None
    if text in ("true", "on", "yes", "auto"):
        return True
    if text.lstrip("-").isdigit():
        return int(text)
    raise ApiError(400, f"diarize must be true, false or a number of speakers, not '{diarize}'", param="diarize",
                   code="invalid_value")
