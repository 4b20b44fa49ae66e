"""An OpenAI-compatible transcription server (`python -m asr_specdec.serve`): FastAPI routes over the public
Whisper API, with concurrent requests' windows decoded as rows of shared batches (batcher.py)."""

from .app import create_app
from .settings import ServerSettings

__all__ = ["create_app", "ServerSettings"]
