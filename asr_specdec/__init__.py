"""asr-specdec: exact speculative decoding for Whisper (and causal LMs)."""

__version__ = "0.1.0"

_EXPORTS = {
    "SpeculativeWhisper": "whisper",
    "TranscriptionResult": "whisper",
    "SpeculativeLM": "text",
    "GenerationResult": "text",
    "DecodeStats": "stats",
    "Drafter": "drafters.base",
    "load_audio": "audio",
    "SpecdecError": "errors",
}


def __getattr__(name):
    # lazy, so `python -m asr_specdec.transcribe --help` does not import torch
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(name)


__all__ = list(_EXPORTS)
