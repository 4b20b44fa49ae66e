"""What an operator sets: batching, limits, time-outs, the API key, the model names served."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.limits import OptionLimits

# the name OpenAI clients send by default; served as an alias of the loaded model
OPENAI_MODEL_ALIAS = "whisper-1"


@dataclass(frozen=True)
class ServerSettings:
    max_batch_size: int = 8  # windows decoded as rows of one batch; 1 turns batching off
    batch_wait_ms: float = 5.0  # how long a window waits for others to join its batch
    max_queue: int = 32  # requests inside the server at once (decoding or waiting); more get 503
    max_concurrent: int | None = None  # requests transcribed at once (None: every admitted one)
    max_upload_mb: float = 25.0  # OpenAI's own limit
    max_audio_seconds: float = 3600.0
    request_timeout: float = 600.0  # seconds from admission to the answer; then 504 and the work is dropped
    api_key: str | None = None  # when set, /v1 requires `Authorization: Bearer <key>`
    model_names: tuple[str, ...] = ()  # ids accepted in `model` (empty: the main model's name and whisper-1)
    retry_after_seconds: int = 1  # the Retry-After of a 503 when the queue is full
    shutdown_timeout: float = 30.0  # on SIGTERM/Ctrl-C, in-flight requests get this long, then a 503
    # the most a request may ask for (beams, best_of, draft tokens, speakers): the options' own, or tighter
    limits: OptionLimits = field(default_factory=lambda: OptionLimits(where="on this server"))

    def __post_init__(self):
        if self.max_batch_size < 1:
            raise ValueError("max_batch_size must be at least 1")
        if self.max_queue < 1:
            raise ValueError("max_queue must be at least 1")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ValueError("max_concurrent must be at least 1")
        if self.batch_wait_ms < 0 or self.max_upload_mb <= 0 or self.max_audio_seconds <= 0:
            raise ValueError("batch_wait_ms must be >= 0, max_upload_mb and max_audio_seconds > 0")
        if self.request_timeout <= 0 or self.shutdown_timeout < 0:
            raise ValueError("request_timeout must be > 0 and shutdown_timeout >= 0")

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)

    def served_names(self, main_name: str) -> tuple[str, ...]:
        return self.model_names or (main_name, OPENAI_MODEL_ALIAS)
