"""GET /health: 200 while serving, 503 while draining for shutdown; the model, the compute type and kernels it runs
on (a fallback to PyTorch says why), the queue and the batcher's counts (no API key needed)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from .dependencies import Service

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(service: Service):
    default = service.default
    status = {
        "status": "draining" if service.admission.draining else "ok",
        "model": default.main_name, "mode": default.mode, "served_names": list(service.model_names),
        "compute_type": default.compute_type.name, "backend": default.backend,
        "requests": {"inside": service.admission.inside, "max_queue": service.admission.limit,
                     "windows_waiting": service.batcher.waiting},
        "batches": {"max_batch_size": service.batcher.max_batch_size, **service.batcher.counts.as_dict()},
    }
    return JSONResponse(status, status_code=503 if service.admission.draining else 200)
