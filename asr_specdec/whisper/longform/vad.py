"""Voice activity detection: Silero VAD finds the speech, which is packed into windows of at most 30 s.

The model is the ONNX file that ships inside the `silero-vad` wheel, run by onnxruntime (nothing comes from a
model hub); the speech regions are the package's own `get_speech_timestamps`, with faster-whisper's defaults
(threshold 0.5, 2-s minimum silence, 0.4-s padding). Consecutive regions are joined, silences between them
removed, into windows of at most 30 s that are decoded independently (as rows of one batch); each window keeps
the map from its own time back to the file's, so segment and word times land on the original timeline.

Whisper's segment timestamps are coarse: in a window holding two speech regions it often starts the second
region's segment where the first one's speech ended, or runs one segment across both. So VAD windows are always
aligned word by word (the words stay in the output only when asked for): each word is mapped within the piece
holding its middle, a segment spans its words, and a segment whose words cross from one piece to the next is cut
there. Without words (a window with no text to align), a segment start that falls in VAD padding (by
construction no speech) moves to where the speech of its region (or of the next one) begins, and an end in
padding moves back to where speech ended.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, replace

import numpy as np
import torch

from ...errors import OptionError, SpecdecError
from ..io.audio import SAMPLE_RATE
from .sequential import TimedTokens


@dataclass(frozen=True)
class VadOptions:
    threshold: float = 0.5
    neg_threshold: float | None = None  # the package's default: threshold - 0.15
    min_speech_duration_ms: int = 0
    # a region longer than this is split at its longest silence, so that every region fits one window
    max_speech_duration_s: float = 29.0
    min_silence_duration_ms: int = 2000
    speech_pad_ms: int = 400

    def __post_init__(self):
        if not 0 < self.threshold < 1:
            raise OptionError("threshold", f"VAD {{threshold}} must be between 0 and 1, not {self.threshold}")
        if not 0 < self.max_speech_duration_s <= 30:
            raise OptionError("max_speech_duration_s", "VAD {max_speech_duration_s} must be in (0, 30]: a region "
                                                       "must fit a 30-s window")
        for name in ("min_speech_duration_ms", "min_silence_duration_ms", "speech_pad_ms"):
            if getattr(self, name) < 0:
                raise OptionError(name, f"VAD {{{name}}} must not be negative, not {getattr(self, name)}")


@dataclass
class SpeechWindow:
    """Speech pieces of a file joined into one window: `samples`, and per piece (start in the window, start in
    the file, length), all in samples; `pads` per piece the (leading, trailing) samples of VAD padding."""

    samples: np.ndarray
    pieces: list[tuple[int, int, int]]
    pads: list[tuple[int, int]] | None = None

    @property
    def start(self) -> float:
        return self.pieces[0][1] / SAMPLE_RATE

    def original_time(self, seconds: float, is_end: bool = False, piece: int | None = None) -> float:
        """A time of the window (seconds from its start) on the file's timeline: in the piece holding it (`is_end`:
        a time exactly at a piece's end belongs to that piece, not the next), or in the given piece."""
        sample = seconds * SAMPLE_RATE
        if piece is None:
            piece = self.piece_at(seconds, is_end)
        local, original, length = self.pieces[piece]
        return round((original + min(max(sample - local, 0.0), length)) / SAMPLE_RATE, 3)

    def segment_bounds(self, start: float, end: float) -> tuple[float, float]:
        """A segment's (start, end) on the file's timeline, moved out of VAD padding (see the module docstring)."""
        start_piece, end_piece = self.piece_at(start), self.piece_at(end, is_end=True)
        new_start, new_end = self.original_time(start, piece=start_piece), self.original_time(end, is_end=True)
        if self.pads is not None:
            local, original, length = self.pieces[start_piece]
            lead, trail = self.pads[start_piece]
            offset = start * SAMPLE_RATE - local
            if offset < lead:
                new_start = (original + lead) / SAMPLE_RATE
            elif offset > length - trail and start_piece < end_piece:
                following = start_piece + 1
                new_start = (self.pieces[following][1] + self.pads[following][0]) / SAMPLE_RATE
            local, original, length = self.pieces[end_piece]
            lead, trail = self.pads[end_piece]
            offset = end * SAMPLE_RATE - local
            if offset > length - trail:
                new_end = (original + length - trail) / SAMPLE_RATE
            elif offset < lead and end_piece > start_piece:
                previous = self.pieces[end_piece - 1]
                new_end = (previous[1] + previous[2] - self.pads[end_piece - 1][1]) / SAMPLE_RATE
        if new_start > new_end:
            return self.original_time(start), self.original_time(end, is_end=True)
        return round(new_start, 3), round(new_end, 3)

    def piece_at(self, seconds: float, is_end: bool = False) -> int:
        sample = seconds * SAMPLE_RATE
        for index, (local, _, length) in enumerate(self.pieces):
            if sample < local + length or (is_end and sample <= local + length):
                return index
        return len(self.pieces) - 1


def on_file_timeline(segment: TimedTokens, window: SpeechWindow) -> list[TimedTokens]:
    """A segment of `window` (times from the window's start) with times on the file's timeline. A word is mapped
    within the speech piece holding its middle, so it never straddles a removed silence; a segment with words
    spans its words, and is cut where its words cross from one piece to another (a subtitle never spans a
    silence VAD removed)."""
    if not segment.words:
        start, end = window.segment_bounds(segment.start, segment.end)
        return [replace(segment, start=start, end=end)]
    parts: list[list] = [[]]
    current_piece = None
    for word in segment.words:
        piece = window.piece_at((word.start + word.end) / 2)
        if word.word.strip():
            if current_piece is not None and piece != current_piece:
                parts.append([])
            current_piece = piece
        parts[-1].append(replace(word, start=round(window.original_time(word.start, piece=piece), 2),
                                 end=round(window.original_time(word.end, piece=piece), 2)))
    if len(parts) == 1:
        return [replace(segment, start=parts[0][0].start, end=parts[0][-1].end, words=tuple(parts[0]))]
    return [replace(segment, start=words[0].start, end=words[-1].end, words=tuple(words),
                    tokens=tuple(token for word in words for token in word.tokens)) for words in parts]


_model_lock = threading.Lock()


def speech_regions(samples: np.ndarray, options: VadOptions = VadOptions()) -> list[tuple[int, int]]:
    """(start, end) samples of each speech region in 16-kHz `samples`."""
    if len(samples) == 0:
        return []
    model, get_speech_timestamps = _silero()
    with _model_lock:  # the ONNX wrapper keeps its recurrent state between calls
        regions = get_speech_timestamps(
            torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)), model, threshold=options.threshold,
            neg_threshold=options.neg_threshold, sampling_rate=SAMPLE_RATE,
            min_speech_duration_ms=options.min_speech_duration_ms,
            max_speech_duration_s=options.max_speech_duration_s,
            min_silence_duration_ms=options.min_silence_duration_ms, speech_pad_ms=options.speech_pad_ms)
    return [(int(region["start"]), int(region["end"])) for region in regions]


def speech_windows(samples: np.ndarray, regions: list[tuple[int, int]], window_samples: int,
                   pad_samples: int = 0) -> list[SpeechWindow]:
    """Regions joined in order into windows of at most `window_samples`; a region longer than that (possible only
    with hand-made regions) is cut into window-sized pieces. `pad_samples`: the padding VAD put around each
    region (none where a region touches the file's ends or a neighbour closer than two pads)."""
    pieces = []
    for index, (start, end) in enumerate(regions):
        lead = pad_samples if start > 0 and (index == 0 or regions[index - 1][1] < start) else 0
        trail = pad_samples if end < len(samples) and (index + 1 == len(regions) or regions[index + 1][0] > end) else 0
        cuts = list(range(start, end, window_samples))
        for begin in cuts:
            finish = min(begin + window_samples, end)
            pieces.append((begin, finish, lead if begin == start else 0, trail if finish == end else 0))
    windows, current = [], []
    length = 0
    for piece in pieces:
        if current and length + piece[1] - piece[0] > window_samples:
            windows.append(_joined(samples, current))
            current, length = [], 0
        current.append(piece)
        length += piece[1] - piece[0]
    if current:
        windows.append(_joined(samples, current))
    return windows


def _joined(samples: np.ndarray, pieces: list[tuple[int, int, int, int]]) -> SpeechWindow:
    layout, pads, local = [], [], 0
    for start, end, lead, trail in pieces:
        layout.append((local, start, end - start))
        pads.append((min(lead, end - start), min(trail, max(0, end - start - lead))))
        local += end - start
    return SpeechWindow(np.concatenate([samples[start:end] for start, end, _, _ in pieces]), layout, pads)


_silero_model = None


def _silero():
    """The ONNX model from the silero-vad wheel, loaded once (shared: callers hold _model_lock), and the
    package's get_speech_timestamps."""
    global _silero_model
    with _model_lock:
        if _silero_model is None:
            _silero_model = new_silero_model()
    from silero_vad import get_speech_timestamps

    return _silero_model, get_speech_timestamps


def new_silero_model():
    """A Silero VAD model of one's own (an ONNX session keeping its own recurrent state, as a live stream needs).
    Importing the package sets torch to one thread, so the caller's thread count is put back."""
    threads = torch.get_num_threads()
    try:
        from silero_vad import load_silero_vad
    except ImportError as error:
        raise SpecdecError("the VAD filter needs the silero-vad package: pip install silero-vad") from error
    finally:
        torch.set_num_threads(threads)
    with warnings.catch_warnings():  # the wheel finds its model file with importlib's deprecated path()
        warnings.simplefilter("ignore", DeprecationWarning)
        return load_silero_vad(onnx=True)
