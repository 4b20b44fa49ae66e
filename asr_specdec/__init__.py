"""asr-specdec: exact speculative decoding for Whisper (and causal LMs).

The package is arranged by concern (docs/architecture.md): `core/` the model-agnostic engine, verifier and drafter
interface; `whisper/` and `text/` the two model adapters; `weights/` where models come from; the command lines
(`transcribe`, `generate`, `convert`) at this level.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "SpeculativeWhisper": "whisper.transcriber",
    "TranscriptionResult": "whisper.result",
    "StreamingTranscriber": "whisper.live.streaming",
    "SpeculativeLM": "text.lm",
    "GenerationResult": "text.lm",
    "DecodeStats": "core.stats",
    "Drafter": "core.drafter",
    "load_audio": "whisper.io.audio",
    "SpecdecError": "errors",
    # faster-whisper's API (compat/): `from asr_specdec import WhisperModel` in place of faster_whisper's
    "WhisperModel": "compat.model",
    "BatchedInferencePipeline": "compat.model",
    "decode_audio": "compat.utils",
    "available_models": "compat.utils",
    "format_timestamp": "compat.utils",
}


def __getattr__(name):
    # lazy, so `python -m asr_specdec.transcribe --help` does not import torch
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(name)


__all__ = list(_EXPORTS)
