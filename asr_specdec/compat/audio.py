"""Audio as faster-whisper decodes it: with PyAV (FFmpeg's decoders and resampler, to 16-bit samples scaled by
1/32768), which is installed wherever faster-whisper is. Without PyAV, the project's own decoder
(whisper/io/audio.py) stands in, announced once: its resampler gives compressed audio samples up to ~0.02 apart from
PyAV's, so a segment boundary or a word time may differ by a frame (issue 37)."""

from __future__ import annotations

import io
import os
import warnings

import numpy as np

from ..errors import AudioError
from ..whisper.io import audio as audio_io

INT16_SCALE = 32768.0
_announced: dict = {}


def decode(source, sampling_rate: int = audio_io.SAMPLE_RATE, split_stereo: bool = False):
    """Float32 samples at `sampling_rate` of a path, encoded bytes or a file-like object; with `split_stereo`, the
    (left, right) channels (a mono file gives its channel twice)."""
    if hasattr(source, "read"):
        source = source.read()
    try:
        import av
    except ImportError:
        return _without_pyav(source, sampling_rate, split_stereo)
    name = str(source) if isinstance(source, (str, os.PathLike)) else "audio bytes"
    if isinstance(source, (bytes, bytearray, memoryview)):
        if not len(source):
            raise AudioError(f"{name}: empty (0 bytes)")
        source = io.BytesIO(bytes(source))
    elif not os.path.isfile(source):
        raise AudioError(f"{name}: no such file")
    try:
        samples = _pyav_samples(av, source, sampling_rate, "stereo" if split_stereo else "mono")
    except av.error.FFmpegError as error:
        raise AudioError(f"{name}: not audio that FFmpeg can decode ({error})") from None
    if split_stereo:
        return samples[0::2], samples[1::2]
    return samples


def _pyav_samples(av, source, sampling_rate: int, layout: str) -> np.ndarray:
    """Every audio frame of the first audio stream, resampled in one stream to 16-bit `layout` at `sampling_rate`
    (frames FFmpeg reports as invalid data are skipped, as faster-whisper skips them)."""
    resampler = av.audio.resampler.AudioResampler(format="s16", layout=layout, rate=sampling_rate)
    chunks = []
    with av.open(source, mode="r", metadata_errors="ignore") as container:
        frames = container.decode(audio=0)
        while True:
            try:
                frame = next(frames)
            except StopIteration:
                break
            except av.error.InvalidDataError:
                continue
            chunks += [resampled.to_ndarray().reshape(-1) for resampled in resampler.resample(frame)]
        chunks += [resampled.to_ndarray().reshape(-1) for resampled in resampler.resample(None)]
    if not chunks:
        return np.zeros(0, dtype=np.float32)
    return np.concatenate(chunks).astype(np.float32) / INT16_SCALE


def _without_pyav(source, sampling_rate: int, split_stereo: bool):
    if not _announced.get("pyav"):
        _announced["pyav"] = True
        warnings.warn("PyAV is not installed (faster-whisper decodes audio with it): decoding with libsndfile/ffmpeg "
                      "and soxr instead, whose samples may differ slightly from faster-whisper's", RuntimeWarning,
                      stacklevel=3)
    if split_stereo:
        return audio_io.load_stereo(source, sampling_rate)
    samples = audio_io.load_audio(source)
    if sampling_rate != audio_io.SAMPLE_RATE:
        import soxr

        samples = np.ascontiguousarray(soxr.resample(samples, audio_io.SAMPLE_RATE, sampling_rate, quality="HQ"),
                                       dtype=np.float32)
    return samples
