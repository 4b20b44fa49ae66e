"""faster-whisper's API on speculative Whisper: change `from faster_whisper import ...` to
`from asr_specdec import ...` and keep the rest of the code (README, "Coming from faster-whisper")."""

from .model import BatchedInferencePipeline, WhisperModel
from .plan import UnsupportedOption
from .types import Segment, TranscriptionInfo, TranscriptionOptions, Word
from .utils import available_models, decode_audio, format_timestamp

__all__ = ["BatchedInferencePipeline", "Segment", "TranscriptionInfo", "TranscriptionOptions",
           "UnsupportedOption", "WhisperModel", "Word", "available_models", "decode_audio", "format_timestamp"]
