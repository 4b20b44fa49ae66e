"""faster-whisper 1.2.1's speech regions, computed here: Silero VAD v6.0's speech probabilities and faster-whisper's
rules that turn them into regions.

The weights: faster-whisper bundles Silero VAD v6.0, which is what the silero-vad wheels 6.0.0 and 6.1.0 ship as
`silero_vad.onnx` (same speech probabilities, to the last bit, on every clip measured); from 6.2 on the wheel
ships newer weights whose probabilities differ by up to 0.8, which moves region boundaries. So the model is, in
order: the installed silero-vad's own v6.0 file (found by its content); else faster-whisper's own copy, if
faster-whisper is installed (announced); else the installed silero-vad's newer model (announced: regions may
differ from faster-whisper's by a few frames).

The probabilities: the audio zero-padded at its end by 512 - len % 512 samples, one probability per 512-sample
frame, each frame seen with the previous frame's last 64 samples in front (zeros before the first), the
recurrent state carried from frame to frame from zero; the last frame's own last 64 samples are zeroed too
(faster-whisper does, which matters when the audio's length leaves under 64 samples of padding).
"""

from __future__ import annotations

import functools
import hashlib
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..whisper.io.audio import SAMPLE_RATE
from ..whisper.longform.vad import VadOptions

FRAME = 512
CONTEXT = 64
# sha256 of silero_vad.onnx in the silero-vad 6.0.0 and 6.1.0 wheels: Silero VAD v6.0, faster-whisper 1.2.1's
V6_0_SHA256 = "597d30b3ec076608d059477bb14cfeffdf951bf5cae370d38f65d33bbfe82004"


def framed(samples: np.ndarray) -> np.ndarray:
    """The padded audio as rows of CONTEXT + FRAME samples: each frame with the previous frame's tail in front."""
    padded = np.pad(np.asarray(samples, dtype=np.float32), (0, FRAME - len(samples) % FRAME))
    frames = padded.reshape(-1, FRAME)
    frames[-1, -CONTEXT:] = 0  # as faster-whisper's: it zeroes the last frame's tail (it becomes the first context)
    tails = np.zeros((len(frames), CONTEXT), dtype=np.float32)
    tails[1:] = frames[:-1, -CONTEXT:]
    return np.concatenate([tails, frames], axis=1)


class _StreamingModel:
    """silero-vad's own ONNX file: inputs (input [1, 576], state [2, 1, 128], sr), one frame per call."""

    def __init__(self, session):
        self.session = session

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        state = np.zeros((2, 1, 128), dtype=np.float32)
        rate = np.array(SAMPLE_RATE, dtype=np.int64)
        probabilities = np.empty(len(rows), dtype=np.float32)
        for index, row in enumerate(rows):
            output, state = self.session.run(None, {"input": row[None], "state": state, "sr": rate})
            probabilities[index] = np.asarray(output).reshape(-1)[0]
        return probabilities


class _SequenceModel:
    """A model taking every frame in one call: inputs (input [frames, 576], h, c [1, 1, 128])."""

    def __init__(self, session):
        self.session = session

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        state = np.zeros((1, 1, 128), dtype=np.float32)
        output, _, _ = self.session.run(None, {"input": rows, "h": state, "c": state})
        return np.asarray(output, dtype=np.float32).reshape(-1)


def _session(path: Path):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.inter_op_num_threads = options.intra_op_num_threads = 1  # as faster-whisper runs it
    options.log_severity_level = 4
    return onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"], sess_options=options)


def _package_model() -> Path:
    """The installed silero-vad's ONNX file, found without importing the package (its import sets torch to one
    thread for the whole process)."""
    from importlib.util import find_spec

    spec = find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        from ..errors import SpecdecError

        raise SpecdecError("the VAD filter needs the silero-vad package: pip install silero-vad")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "silero_vad.onnx"


def _faster_whisper_asset() -> Path | None:
    from importlib.util import find_spec

    spec = find_spec("faster_whisper")  # not imported: only its file is wanted
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "assets" / "silero_vad_v6.onnx"
    return path if path.is_file() else None


@functools.lru_cache(maxsize=1)
def _model():
    package = _package_model()
    if hashlib.sha256(package.read_bytes()).hexdigest() == V6_0_SHA256:
        return _StreamingModel(_session(package))
    asset = _faster_whisper_asset()
    if asset is not None:
        warnings.warn("the installed silero-vad ships newer VAD weights than faster-whisper 1.2.1 uses: the "
                      "faster-whisper drop-in takes faster-whisper's own VAD model file (install silero-vad<6.2 "
                      "to use the package's)", stacklevel=4)
        return _SequenceModel(_session(asset))
    warnings.warn("the installed silero-vad ships newer VAD weights than faster-whisper 1.2.1 uses: speech regions "
                  "may differ from faster-whisper's by a few 32-ms frames (install silero-vad<6.2)", stacklevel=4)
    return _StreamingModel(_session(package))


def speech_probabilities(samples: np.ndarray) -> np.ndarray:
    """One speech probability per 512-sample frame of the padded audio."""
    return _model()(framed(samples))


@dataclass
class _Region:
    start: int
    end: int = 0


def faster_whisper_regions(samples: np.ndarray, options: VadOptions,
                           max_speech_seconds: float | None = None) -> list[tuple[int, int]]:
    """faster-whisper 1.2.1's speech regions (its get_speech_timestamps' rules, including its quirks: a region still
    open at the end runs to the last sample; a region longer than the limit is cut at the last silence of over
    98 ms, if any, else where it reaches the limit)."""
    if len(samples) == 0:
        return []
    return regions_from_probabilities(speech_probabilities(samples), len(samples), options, max_speech_seconds)


def regions_from_probabilities(probabilities: np.ndarray, length: int, options: VadOptions,
                               max_speech_seconds: float | None = None) -> list[tuple[int, int]]:
    limit = options.max_speech_duration_s if max_speech_seconds is None else max_speech_seconds
    pad = SAMPLE_RATE * options.speech_pad_ms / 1000
    max_speech = SAMPLE_RATE * limit - FRAME - 2 * pad
    min_speech = SAMPLE_RATE * options.min_speech_duration_ms / 1000
    min_silence = SAMPLE_RATE * options.min_silence_duration_ms / 1000
    silence_worth_a_cut = SAMPLE_RATE * 98 / 1000
    high = options.threshold
    low = max(high - 0.15, 0.01) if options.neg_threshold is None else options.neg_threshold

    regions: list[_Region] = []
    current: _Region | None = None
    silence_start = 0  # where the current silence began (0: none)
    cut_end = cut_start = 0  # the last silence long enough to cut a too long region at, and the speech after it
    for index, probability in enumerate(probabilities):
        position = FRAME * index
        if probability >= high and silence_start:
            silence_start = 0
            if cut_start < cut_end:
                cut_start = position
        if probability >= high and current is None:
            current = _Region(position)
            continue
        if current is not None and position - current.start > max_speech:
            if cut_end:
                current.end = cut_end
                regions.append(current)
                current = _Region(cut_start) if cut_start >= cut_end else None
            else:
                current.end = position
                regions.append(current)
                current = None
            cut_end = cut_start = silence_start = 0
            if current is None:
                continue
        if probability < low and current is not None:
            if not silence_start:
                silence_start = position
            if position - silence_start > silence_worth_a_cut:
                cut_end = silence_start
            if position - silence_start < min_silence:
                continue
            current.end = silence_start
            if current.end - current.start > min_speech:
                regions.append(current)
            current = None
            cut_end = cut_start = silence_start = 0
    if current is not None and length - current.start > min_speech:
        current.end = length
        regions.append(current)
    return _padded(regions, pad, length)


def _padded(regions: list[_Region], pad: float, length: int) -> list[tuple[int, int]]:
    """Each region widened by `pad` samples on both sides, or by half the silence where two would overlap."""
    for index, region in enumerate(regions):
        if index == 0:
            region.start = int(max(0, region.start - pad))
        if index + 1 < len(regions):
            following = regions[index + 1]
            silence = following.start - region.end
            if silence < 2 * pad:
                region.end += int(silence // 2)
                following.start = int(max(0, following.start - silence // 2))
            else:
                region.end = int(min(length, region.end + pad))
                following.start = int(max(0, following.start - pad))
        else:
            region.end = int(min(length, region.end + pad))
    return [(region.start, region.end) for region in regions]
