"""One live update's decode: the buffer's window, built by the transcriber's window builder (call.py's
`CallWindows.live_window`) with the committed text before the buffer as its prompt, decoded drafted from the last
hypothesis (core/hypothesis.py); with compare, decoded plain as well, each of the two with its own encoding and
the two taking turns going first, so that their times compare as a benchmark's do."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ...core.draft_length import DraftLength
from ...core.hypothesis import HypothesisDrafter, HypothesisUsage
from ...core.stats import DecodeStats
from ..recipe.scoring import WindowScore
from ..runtime.pipeline import PLAIN, Speculation

# a hypothesis of a 25-s buffer is ~80-100 tokens; drafting it in long runs costs one main pass each
DEFAULT_HYPOTHESIS_TOKENS = 64


@dataclass
class LiveDecode:
    """One update's decode: its tokens and telemetry (nothing when the buffer was not decoded)."""

    tokens: list[int] = field(default_factory=list)
    stats: DecodeStats | None = None
    seconds: float = 0.0
    usage: HypothesisUsage | None = None
    plain_seconds: float | None = None
    identical: bool | None = None
    score: WindowScore | None = None  # no-speech probability and log-probability of the decode
    words: list | None = None  # the hypothesis's words aligned to the audio (AlignedWord), when it may be cut


class UpdateDecoder:
    """Decodes a live stream's updates with a SpeculativeWhisper's models (shared, not copied): drafted from the
    last hypothesis (`hypothesis_drafting`), then by the transcriber's own drafter where `tail_drafting` says (None:
    only when it runs no model, since a model drafter must first feed its own cache the prompt and the whole
    hypothesis, a pass about as costly as the main model's verification of them, which a tail of a few tokens does
    not pay back). `decode_windows(windows, speculation)` runs each decode (default: the transcriber's pipeline)."""

    def __init__(self, asr, *, language: str | None, hypothesis_drafting: bool, hypothesis_tokens: int,
                 tail_drafting: bool | None, compare: bool, decode_windows=None):
        self.pipeline = asr.pipeline
        self.speculation, self.hypothesis_drafter = asr.speculation, None
        if hypothesis_drafting:
            drafter, length = asr.speculation.drafter, asr.speculation.draft_length
            tail = drafter if tail_drafting or tail_drafting is None and not _runs_model(drafter) else None
            self.hypothesis_drafter = HypothesisDrafter(tail, length.tokens)
            self.speculation = Speculation(self.hypothesis_drafter, DraftLength(max(hypothesis_tokens, length.tokens)))
        pipeline = self.pipeline
        self.decode_windows = decode_windows or (lambda windows, speculation: pipeline.decode(windows, speculation))
        self.plain = PLAIN if compare else None
        self._plain_first = False  # with compare: whether the next update decodes plain first
        tokens = pipeline.tokens
        language = language or asr.language
        self.language_id = tokens.language_token(language) if language and tokens.multilingual else None
        # each decode's window is built as a transcribe call's windows are (hotwords, suppression, limits, the
        # repetition rules), with the committed text as its prompt
        self._windows = asr.call_windows()

    def decode(self, samples: np.ndarray, prompt: list[int], hypothesis: list[int]) -> LiveDecode:
        """One window of the buffer `samples`, conditioned on `prompt` (the committed text before it), drafted from
        `hypothesis` (the last update's tokens), and with compare decoded plain as well, from the same features."""
        pipeline = self.pipeline
        started = time.perf_counter()
        frames = -(-len(samples) // pipeline.processor.feature_extractor.hop_length)
        window = self._windows.live_window(pipeline.features(samples), self.language_id, previous=prompt or None,
                                           audio_frames=min(frames, pipeline.frames.window))
        features_seconds = time.perf_counter() - started
        if self.hypothesis_drafter is not None:
            self.hypothesis_drafter.expect(hypothesis)
        sides = [self.speculation] if self.plain is None else [self.speculation, self.plain]
        if self._plain_first:
            sides.reverse()
        self._plain_first = self.plain is not None and not self._plain_first  # compared sides take turns
        decodes, seconds = {}, {}
        for speculation in sides:
            if self.plain is not None:  # each compared decode runs its own encoder (none kept from the other)
                pipeline.forget_encoding()
            began = time.perf_counter()
            decodes[id(speculation)] = self.decode_windows([window], speculation)[0]
            seconds[id(speculation)] = features_seconds + time.perf_counter() - began
        decoded = decodes[id(self.speculation)]
        result = LiveDecode(decoded.tokens, decoded.stats, seconds[id(self.speculation)],
                            score=decoded.extras.score if decoded.extras else None,
                            words=decoded.extras.words if decoded.extras else None)
        if self.hypothesis_drafter is not None:
            result.usage = self.hypothesis_drafter.usage(decoded.tokens)
        if self.language_id is None and pipeline.tokens.multilingual and _has_text(decoded.tokens,
                                                                                   pipeline.tokens.end_of_text):
            self.language_id = decoded.language_id  # keep the language first heard
        if self.plain is not None:
            result.plain_seconds = seconds[id(self.plain)]
            result.identical = decodes[id(self.plain)].tokens == decoded.tokens
        return result


def _has_text(tokens: list[int], end_of_text: int) -> bool:
    return any(token < end_of_text for token in tokens)


def _runs_model(drafter) -> bool:
    return drafter is not None and drafter.uses_model
