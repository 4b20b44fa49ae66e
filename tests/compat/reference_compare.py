"""faster-whisper 1.2.1 as the reference of the drop-in: both run on the same CTranslate2 weights of `base` at
compute_type="float32", and their segments are compared field by field. faster-whisper's results are memoised per
(call, audio, arguments) for the session, so a test that needs the same reference twice pays for it once, and, given
a `store` folder (the tests' ASR_SPECDEC_TEST_CACHE), kept there across sessions under a key naming faster-whisper's
version, the weights' and the audio's content and the arguments: a later session decodes our side only."""

from __future__ import annotations

import hashlib
import pickle
from pathlib import Path

import numpy as np

from ..threads import THREADS

WEIGHTS = "base"
COMPUTE_TYPE = "float32"


def fields(segments, words: bool = False) -> list[tuple]:
    """What two transcriptions must share: each segment's text, start and end (and each word's text, start, end)."""
    rows = []
    for segment in segments:
        row = (segment.text, _time(segment.start), _time(segment.end))
        if words:
            row += (tuple((word.word, _time(word.start), _time(word.end)) for word in segment.words or ()),)
        rows.append(row)
    return rows


def deterministic(segments) -> list:
    """The segments before the first one decoded by sampling: a window that falls back to a temperature above 0
    draws from each library's own random stream (CTranslate2's, unseeded, goes on from call to call), which the
    other cannot reproduce, and everything after it is conditioned on that random text."""
    segments = list(segments)
    sampled = [index for index, segment in enumerate(segments) if segment.temperature]
    return segments[: sampled[0]] if sampled else segments


def comparable(theirs, ours, words: bool = False) -> tuple[list, list]:
    """What two transcriptions must share: the fields of their deterministic segments, and whether (then from
    the same segment on) both had to sample."""
    def shared(segments) -> list:
        segments = list(segments)
        kept = deterministic(segments)
        return [*fields(kept, words), len(kept) < len(segments)]

    return shared(theirs), shared(ours)


def _time(seconds: float) -> float:
    """A time as both write it: faster-whisper leaves float arithmetic unrounded (3.2800000000000002), we round to
    milliseconds; anything a millisecond apart still differs."""
    return round(float(seconds), 6)


class Reference:
    """The two implementations side by side: `pair(call, audio, key, **arguments)` decodes `audio` (a path or
    samples; `key` names samples) with both and returns (faster-whisper's segments, info), (ours, info)."""

    def __init__(self, scratch: Path, store: Path | None = None):
        import faster_whisper

        from asr_specdec import BatchedInferencePipeline, WhisperModel
        from asr_specdec.weights.packs import assemble_pack

        self.faster_whisper = faster_whisper
        pack = assemble_pack(WEIGHTS, scratch)
        theirs = faster_whisper.WhisperModel(str(pack), device="cpu", compute_type=COMPUTE_TYPE, cpu_threads=THREADS)
        self.store = None
        if store is not None:
            weights = hashlib.sha256((Path(pack) / "model.bin").read_bytes()).hexdigest()[:16]
            self.store = Path(store) / "faster-whisper-reference" / f"{faster_whisper.__version__}-{weights}"
        ours = WhisperModel(WEIGHTS, compute_type=COMPUTE_TYPE)
        self.models = {"theirs": (theirs, faster_whisper.BatchedInferencePipeline(theirs)),
                       "ours": (ours, BatchedInferencePipeline(ours))}
        self._theirs: dict = {}

    def decode(self, side: str, call: str, audio, **arguments):
        model, batched = self.models[side]
        transcriber = batched if call == "batched" else model
        segments, info = transcriber.transcribe(audio, **arguments)
        return list(segments), info

    def pair(self, call: str, audio, key: str | None = None, **arguments):
        memo = (call, key or str(audio), repr(sorted(arguments.items())))
        if memo not in self._theirs:
            self._theirs[memo] = self._stored(memo, audio, lambda: self.decode("theirs", call, audio, **arguments))
        return self._theirs[memo], self.decode("ours", call, audio, **arguments)

    def _stored(self, memo: tuple, audio, decode):
        if self.store is None:
            return decode()
        content = audio.tobytes() if isinstance(audio, np.ndarray) else Path(audio).read_bytes()
        name = hashlib.sha256(repr(memo).encode() + hashlib.sha256(content).digest()).hexdigest()
        path = self.store / f"{name}.pickle"
        if path.is_file():
            return pickle.loads(path.read_bytes())
        result = decode()
        self.store.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.write_bytes(pickle.dumps(result))
        partial.replace(path)
        return result
