"""A transcription as OpenAI's response formats (json, text, srt, vtt, verbose_json) and as server-sent events.

`verbose_json` follows OpenAI's schema (task, language by name, duration, text, segments with id, seek, start,
end, text, tokens, temperature, avg_logprob, compression_ratio, no_speech_prob; with
`timestamp_granularities[]=word` also `words`, each with word, start and end, and each segment's own words)
and adds this server's telemetry under `asr_specdec`. `seek` is the segment's start in 10-ms frames;
avg_logprob and no_speech_prob are those the window was judged by when it was scored (fallback or no-speech
thresholds), else null: the engine verifies greedy choices without computing every log-probability.
"""

from __future__ import annotations

import json
import zlib

from fastapi.responses import JSONResponse, PlainTextResponse, Response

from ..whisper.io.formats import Segment, to_srt, to_vtt
from ..whisper.runtime.languages import NAMES
from .forms import AudioRequest

TELEMETRY_KEY = "asr_specdec"


def language_name(code: str | None) -> str | None:
    return NAMES.get(code, code) if code else None


def render(result, request: AudioRequest, telemetry: dict) -> Response:
    """The answer to a non-streaming request, in its response_format."""
    if request.response_format == "text":
        return PlainTextResponse(api_text(result) + "\n")
    if request.response_format == "srt":
        return PlainTextResponse(to_srt(result.segments))
    if request.response_format == "vtt":
        return Response(to_vtt(result.segments), media_type="text/vtt; charset=utf-8")
    if request.response_format == "verbose_json":
        return JSONResponse(verbose(result, request, telemetry))
    return JSONResponse({"text": api_text(result), "usage": usage(result)})


def api_text(result) -> str:
    """The whole text as OpenAI's API gives it: without Whisper's leading space (which its segments keep)."""
    return result.text.strip()


def usage(result) -> dict:
    return {"type": "duration", "seconds": round(result.duration, 3)}


def verbose(result, request: AudioRequest, telemetry: dict) -> dict:
    # OpenAI reports the translation's language (English), and the audio's language for a transcription
    language = "english" if request.task == "translate" else language_name(result.language)
    record = {
        "task": request.task, "language": language, "duration": round(result.duration, 3), "text": api_text(result),
        "language_probability": result.language_probability,
        "segments": [segment_record(index, segment, request.temperature)
                     for index, segment in enumerate(result.segments)],
        "usage": usage(result), TELEMETRY_KEY: telemetry,
    }
    if request.word_timestamps:
        record["words"] = [word_record(word) for segment in result.segments for word in segment.words]
        for segment, segment_json in zip(result.segments, record["segments"]):
            segment_json["words"] = [word_record(word) for word in segment.words]
    return record


def word_record(word) -> dict:
    """OpenAI's word (word, start, end), plus the probability openai-whisper and faster-whisper give."""
    record = {"word": word.word.strip(), "start": word.start, "end": word.end,
              "probability": round(word.probability, 4)}
    return record | ({"speaker": word.speaker} if getattr(word, "speaker", None) is not None else {})


def segment_record(index: int, segment: Segment, temperature: float) -> dict:
    return {
        "id": index, "seek": round(segment.start * 100), "start": segment.start, "end": segment.end,
        "text": segment.text, "tokens": list(segment.tokens),
        "temperature": segment.temperature or temperature,  # a fallback retry's, else the request's
        "avg_logprob": segment.avg_logprob,
        "compression_ratio": (segment.compression_ratio if segment.compression_ratio is not None
                              else round(compression_ratio(segment.text), 4)),
        "no_speech_prob": segment.no_speech_prob,
    } | ({"speaker": segment.speaker} if segment.speaker is not None else {})


def compression_ratio(text: str) -> float:
    """openai-whisper's repetition gauge: text bytes over their zlib-compressed size."""
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def server_sent_event(data: dict) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"


def delta_event(index: int, segment: Segment) -> str:
    """One decoded segment, as OpenAI's `transcript.text.delta`, with its times under `segment`."""
    delta = segment.text.lstrip() if index == 0 else segment.text  # the deltas add up to the done event's text
    return server_sent_event({"type": "transcript.text.delta", "delta": delta,
                              "segment": {"id": index, "start": segment.start, "end": segment.end,
                                          "text": segment.text}})


def done_event(result, telemetry: dict) -> str:
    return server_sent_event({"type": "transcript.text.done", "text": api_text(result), "usage": usage(result),
                              "language": result.language, TELEMETRY_KEY: telemetry})
