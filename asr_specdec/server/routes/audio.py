"""POST /v1/audio/transcriptions and /v1/audio/translations (OpenAI's multipart API)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from ..access_log import note
from ..forms import AudioRequest, TranscriptionForm, TranslationForm
from ..responses import render
from ..service import TranscriptionService
from .dependencies import Service

router = APIRouter(prefix="/audio", tags=["audio"])
PATHS = ("/v1/audio/transcriptions", "/v1/audio/translations")


@router.post("/transcriptions")
async def create_transcription(http_request: Request, request: TranscriptionForm, service: Service):
    return await _answer(http_request, request, service)


@router.post("/translations")
async def create_translation(http_request: Request, request: TranslationForm, service: Service):
    return await _answer(http_request, request, service)


async def _answer(http_request: Request, request: AudioRequest, service: TranscriptionService):
    note(http_request, task=request.task, response_format=request.response_format, stream=request.stream,
         upload_bytes=len(request.audio), mode=request.mode or service.default.mode)
    deadline = service.deadline()
    service.check(request)
    samples = await service.load(request, deadline)
    note(http_request, audio_seconds=round(len(samples) / 16000, 3))
    if request.stream:
        return StreamingResponse(service.stream(request, samples, http_request, deadline),
                                 media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
    outcome = await service.transcribe(request, samples, http_request, deadline)
    note(http_request, batch_rows=outcome.telemetry["batch_rows"],
         batch_wait_seconds=outcome.telemetry["batch_wait_seconds"], tokens=len(outcome.result.tokens))
    return render(outcome.result, request, outcome.telemetry)
