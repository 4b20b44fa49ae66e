"""GET /v1/models and /v1/models/{id}: the names this server answers to (OpenAI's list shape)."""

from __future__ import annotations

from fastapi import APIRouter

from ..errors import ApiError
from ..service import TranscriptionService
from .dependencies import Service

router = APIRouter(prefix="/models", tags=["models"])


def _model(name: str, service: TranscriptionService) -> dict:
    return {"id": name, "object": "model", "created": service.started, "owned_by": "asr-specdec"}


@router.get("")
async def list_models(service: Service):
    return {"object": "list", "data": [_model(name, service) for name in service.model_names]}


@router.get("/{name:path}")
async def get_model(name: str, service: Service):
    if name not in service.model_names:
        raise ApiError(404, f"model '{name}' does not exist here", param="model", code="model_not_found")
    return _model(name, service)
