"""Audio input: a file, an encoded file's bytes or a sample array in; float32 mono 16 kHz samples out.

Anything unusable raises one AudioError whose one-line message names the input and the problem.
A file its decoder rejects part-way (a FLAC cut short loses sync) is an AudioError; a truncated WAV, OGG
or MP3, whose decoders stop cleanly at the cut, gives the samples it holds, as players do (which also
rescues recordings whose header was never finalised).
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from ...errors import AudioError

SAMPLE_RATE = 16000
RMS_FRAME_SECONDS = 0.025


def load_audio(source, sample_rate: float | None = None) -> np.ndarray:
    """1-D float32 mono samples at SAMPLE_RATE from a path, an encoded file's bytes, or a sample array.

    `sample_rate` is the rate of an array and is required unless the array is already 16 kHz (None
    means 16 kHz); files and bytes carry their own rate, so it is ignored for them. Integer arrays are
    scaled to [-1, 1]; a 2-D array is mixed down by mean over its smaller dimension (the channels).
    """
    if isinstance(source, np.ndarray):
        name = "audio array"
        samples, rate = _mono_array(source, name), _array_rate(sample_rate, name)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        name = "audio bytes"
        if len(source) == 0:
            raise AudioError(f"{name}: empty (0 bytes)")
        samples, rate = _decode(bytes(source), name)
    elif isinstance(source, (str, os.PathLike)):
        name = str(source)
        samples, rate = _decode(_readable_file(Path(source).expanduser(), name), name)
    else:
        raise TypeError(f"load_audio takes a path, bytes or a numpy array, not {type(source).__name__}")
    if samples.size == 0:
        raise AudioError(f"{name}: contains no audio samples")
    if not np.isfinite(samples).all():
        raise AudioError(f"{name}: contains NaN or infinite samples")
    if rate != SAMPLE_RATE:
        # soxr HQ is librosa.resample's soxr_hq bit for bit, without the ~3 s that librosa takes to load it
        import soxr

        samples = soxr.resample(samples, rate, SAMPLE_RATE, quality="HQ")
    return np.ascontiguousarray(samples, dtype=np.float32)


def load_stereo(source, sample_rate: int = SAMPLE_RATE) -> tuple[np.ndarray, np.ndarray]:
    """(left, right) float32 samples at `sample_rate` from a path or an encoded file's bytes (a mono file gives
    its channel twice, as faster-whisper's decode_audio(split_stereo=True) does)."""
    if isinstance(source, (str, os.PathLike)):
        name = str(source)
        source = _readable_file(Path(source).expanduser(), name)
    elif isinstance(source, (bytes, bytearray, memoryview)):
        name, source = "audio bytes", bytes(source)
        if not source:
            raise AudioError(f"{name}: empty (0 bytes)")
    else:
        raise TypeError(f"load_stereo takes a path or bytes, not {type(source).__name__}")
    channels, rate = _decode(source, name, stereo=True)
    if rate != sample_rate and channels.size:
        import soxr

        channels = soxr.resample(channels, rate, sample_rate, quality="HQ")
    channels = np.ascontiguousarray(channels.T, dtype=np.float32)
    return channels[0], channels[1]


def duration_seconds(audio: np.ndarray) -> float:
    return len(audio) / SAMPLE_RATE


def split_long_audio(audio: np.ndarray, max_seconds: float = 30.0,
                     search_seconds: float = 5.0) -> list[tuple[float, np.ndarray]]:
    """[(start seconds, window)] of at most `max_seconds` each, covering every sample once, in order.

    Each cut sits in the quietest 25 ms frame of the last `search_seconds` before the limit, so that a
    cut rarely falls inside a word. Windows are views of `audio`.
    """
    limit = int(max_seconds * SAMPLE_RATE)
    if limit < 1:
        raise ValueError(f"max_seconds must be positive, got {max_seconds}")
    search = min(int(search_seconds * SAMPLE_RATE), limit)
    windows, start = [], 0
    while len(audio) - start > limit:
        search_start = start + limit - search
        cut = search_start + _quietest_point(audio[search_start:start + limit])
        windows.append((start / SAMPLE_RATE, audio[start:cut]))
        start = cut
    windows.append((start / SAMPLE_RATE, audio[start:]))
    return windows


def _quietest_point(region: np.ndarray) -> int:
    """Index, within `region`, of the middle of its lowest-RMS frame (its end if it holds no frame)."""
    frame = int(RMS_FRAME_SECONDS * SAMPLE_RATE)
    frames = len(region) // frame
    if frames == 0:
        return len(region)
    power = np.square(region[:frames * frame].reshape(frames, frame), dtype=np.float64).mean(axis=1)
    return int(np.argmin(power)) * frame + frame // 2


def _array_rate(sample_rate, name: str) -> float:
    rate = SAMPLE_RATE if sample_rate is None else sample_rate
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)) or not 0 < rate < np.inf:
        raise AudioError(f"{name}: sample_rate must be a positive number of Hz, got {sample_rate!r}")
    return rate


def _readable_file(path: Path, name: str) -> Path:
    if not path.exists():
        raise AudioError(f"{name}: no such file")
    if path.is_dir():
        raise AudioError(f"{name}: is a directory, not an audio file")
    try:
        with path.open("rb") as file:
            empty = not file.read(1)
    except OSError as error:
        raise AudioError(f"{name}: cannot be read ({error.strerror or error})") from None
    if empty:
        raise AudioError(f"{name}: empty file (0 bytes)")
    return path


def _decode(source: bytes | Path, name: str, stereo: bool = False) -> tuple[np.ndarray, int]:
    """(mono float32 samples, or [samples, 2] with `stereo`; rate): soundfile for the formats libsndfile knows,
    else ffmpeg."""
    import soundfile

    try:
        file = soundfile.SoundFile(io.BytesIO(source) if isinstance(source, bytes) else source)
    except soundfile.LibsndfileError:
        return _decode_with_ffmpeg(source, name, channels=2 if stereo else 1), SAMPLE_RATE
    # libsndfile knows the format, so a failure now is damage that ffmpeg would only paper over
    with file:
        try:
            samples = file.read(dtype="float32", always_2d=True)
            if stereo:
                return (samples[:, :2] if samples.shape[1] >= 2 else np.repeat(samples, 2, axis=1)), file.samplerate
            return samples.mean(axis=1), file.samplerate
        except soundfile.LibsndfileError as error:
            reason = str(error).removeprefix("Error : ").rstrip(".")
            raise AudioError(f"{name}: corrupt or truncated {file.format} audio ({reason})") from None


def _decode_with_ffmpeg(source: bytes | Path, name: str, channels: int = 1) -> np.ndarray:
    if shutil.which("ffmpeg") is None:
        raise AudioError(f"{name}: not audio that libsndfile can read (install ffmpeg for mp4/m4a/aac/wma)")
    # "file:" stops ffmpeg reading a name with a colon as a protocol; a path lets it seek (mp4 moov at end)
    input_spec = "pipe:0" if isinstance(source, bytes) else f"file:{source.resolve()}"
    command = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", input_spec,
               "-f", "f32le", "-ac", str(channels), "-ar", str(SAMPLE_RATE), "pipe:1"]
    process = subprocess.run(command, input=source if isinstance(source, bytes) else None,
                             capture_output=True, check=False)
    if process.returncode != 0:
        lines = process.stderr.decode(errors="replace").strip().splitlines()
        reason = lines[-1].removeprefix(f"{input_spec}: ") if lines else f"ffmpeg exit code {process.returncode}"
        raise AudioError(f"{name}: not a recognised audio file ({reason})")
    samples = np.frombuffer(process.stdout, dtype=np.float32)
    return samples if channels == 1 else samples.reshape(-1, channels)


def _mono_array(samples: np.ndarray, name: str) -> np.ndarray:
    if samples.dtype.kind not in "fiu":
        raise AudioError(f"{name}: samples must be integers or floats, not {samples.dtype}")
    if samples.ndim == 1:
        return _scaled(samples)
    if samples.ndim == 2:
        return _scaled(samples).mean(axis=int(np.argmin(samples.shape)))
    raise AudioError(f"{name}: expected 1-D samples or 2-D (samples, channels), got shape {samples.shape}")


def _scaled(samples: np.ndarray) -> np.ndarray:
    """Float32 in [-1, 1] for integer PCM (unsigned PCM is offset by half its range); floats as they are."""
    if samples.dtype.kind == "f":
        return samples.astype(np.float32, copy=False)
    half_range = 2.0 ** (8 * samples.dtype.itemsize - 1)
    offset = half_range if samples.dtype.kind == "u" else 0.0
    return ((samples.astype(np.float64) - offset) / half_range).astype(np.float32)
