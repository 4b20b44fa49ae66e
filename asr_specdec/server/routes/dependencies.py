"""What routes get injected: the service the lifespan handler created."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from ..service import TranscriptionService


def get_service(request: Request) -> TranscriptionService:
    return request.app.state.service


Service = Annotated[TranscriptionService, Depends(get_service)]
