"""The Whisper adapter: audio -> features -> encoder -> engine -> tokens -> segments and text.

`SpeculativeWhisper` (transcriber.py) is the public API; every path decodes through one window pipeline
(pipeline.py) over the lean decoder (decoder.py)."""

_EXPORTS = {
    "SpeculativeWhisper": "transcriber",
    "TranscriptionResult": "result",
    "Progress": "transcriber",
    "load_audio": "io.audio",
    "StreamingTranscriber": "live.streaming",
    "StreamingUpdate": "live.updates",
    "SpeedComparison": "comparison",
    "compare_speeds": "comparison",
}


def __getattr__(name):
    # lazy, so that light modules (audio, formats) can be imported without loading the models' code
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(name)


__all__ = list(_EXPORTS)
