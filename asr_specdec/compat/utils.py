"""faster-whisper's helpers: `available_models`, `format_timestamp`, `decode_audio`, and which model a
faster-whisper size name means here."""

from __future__ import annotations

# faster-whisper's size names, as the transformers checkpoints of the same weights (our offline packs come first)
HUB_IDS = {
    "tiny.en": "openai/whisper-tiny.en",
    "tiny": "openai/whisper-tiny",
    "base.en": "openai/whisper-base.en",
    "base": "openai/whisper-base",
    "small.en": "openai/whisper-small.en",
    "small": "openai/whisper-small",
    "medium.en": "openai/whisper-medium.en",
    "medium": "openai/whisper-medium",
    "large-v1": "openai/whisper-large",
    "large-v2": "openai/whisper-large-v2",
    "large-v3": "openai/whisper-large-v3",
    "large": "openai/whisper-large-v3",
    "distil-large-v2": "distil-whisper/distil-large-v2",
    "distil-medium.en": "distil-whisper/distil-medium.en",
    "distil-small.en": "distil-whisper/distil-small.en",
    "distil-large-v3": "distil-whisper/distil-large-v3",
    "distil-large-v3.5": "distil-whisper/distil-large-v3.5",
    "large-v3-turbo": "openai/whisper-large-v3-turbo",
    "turbo": "openai/whisper-large-v3-turbo",
}


def available_models() -> list[str]:
    """The model size names WhisperModel takes (faster-whisper's): an offline pack where one is installed
    (`base`, `tiny.en`), else the model hub's transformers checkpoint of that size."""
    return list(HUB_IDS)


def model_spec(name: str) -> tuple[str, bool]:
    """(what SpeculativeWhisper loads for `name`, whether it would come from the model hub)."""
    from pathlib import Path

    from ..weights.packs import pack_names

    if name in pack_names() or Path(name).expanduser().exists():
        return name, False
    return HUB_IDS.get(name, name), True


def format_timestamp(seconds: float, always_include_hours: bool = False, decimal_marker: str = ".") -> str:
    """`[HH:]MM:SS.mmm`, hours shown when there are any or when asked for (faster-whisper's)."""
    if seconds < 0:
        raise ValueError(f"a timestamp is 0 or more seconds, not {seconds}")
    milliseconds = round(seconds * 1000.0)
    hours, milliseconds = divmod(milliseconds, 3_600_000)
    minutes, milliseconds = divmod(milliseconds, 60_000)
    whole_seconds, milliseconds = divmod(milliseconds, 1000)
    hours_marker = f"{hours:02d}:" if always_include_hours or hours > 0 else ""
    return f"{hours_marker}{minutes:02d}:{whole_seconds:02d}{decimal_marker}{milliseconds:03d}"


def decode_audio(input_file, sampling_rate: int = 16000, split_stereo: bool = False):
    """Float32 samples at `sampling_rate` from a path or a file-like object, as faster-whisper decodes them (PyAV;
    compat/audio.py); with `split_stereo`, the (left, right) channels (a mono file gives its channel twice)."""
    from .audio import decode

    return decode(input_file, sampling_rate, split_stereo)
