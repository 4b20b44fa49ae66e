"""openai-whisper's decoding recipe for a window: temperature fallback and the no-speech judgement.

A window is first decoded at the ladder's first temperature (0: greedy, or beam search with `beam_size` beams as
openai does it; speculative and exact either way). If its text is
too repetitive (gzip compression ratio above `compression_ratio_threshold`) or its average log-probability is
below `logprob_threshold`, it is decoded again at the next temperature, sampled and speculative (rejection
sampling keeps the main model's distribution; the drafter samples at the same temperature), `best_of`
candidates at once as rows of one decode call, the likeliest kept; and so on up the ladder. A window whose
no-speech probability is above `no_speech_threshold` while its log-probability is low is silence: no retry,
and the caller skips it. Every retry is more `WindowPipeline.decode` calls; nothing here changes shared state.

openai's no-speech rule keeps a window whose text is likely enough, however sure the model is that nobody
speaks, and that is exactly how Whisper's "you" on digital silence gets through (no-speech 0.93, average
log-probability -0.45 with base). So a window is also silence when its no-speech probability is above
`silence_threshold` (0.8), whatever its text: on the shared speech clips no window went above 0.14. That rule
reads the no-speech probability alone, which the prompt fixes before any token is generated, and a window it
judges silent is dropped whatever it would say; so the pipeline decides it first and generates nothing for such
a window (an hour of dithered silence costs what an hour of zeros does, not ~450 tokens a window). openai's
rule (above `no_speech_threshold` AND average log-probability below `logprob_threshold`) needs the text's
log-probability, so it still judges after decoding.
"""

from __future__ import annotations

import numbers
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace

from ...core.beam import BeamSearch
from ...core.beam_ctranslate2 import CTranslate2BeamSearch
from ...core.limits import LIMITS
from ...core.logits import Sampling
from ...core.stats import DecodeStats
from ...errors import OptionError
from ..runtime.pipeline import DecodedWindow, Window, WindowPipeline

DEFAULT_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
TEMPERATURE_INCREMENT = 0.2  # openai-whisper's step up the ladder
MAX_TEMPERATURE = 2.0
# the beam search algorithms by name: openai-whisper's (SpeculativeWhisper's) and CTranslate2's (the drop-in's)
BEAM_ALGORITHMS = {"openai": BeamSearch, "ctranslate2": CTranslate2BeamSearch}


def check_temperatures(values: tuple[float, ...], name: str) -> None:
    """OptionError (naming `name`, the keyword they came by) unless `values` is a ladder: one or more numbers from
    0 to MAX_TEMPERATURE."""
    if not values or any(isinstance(value, bool) or not isinstance(value, numbers.Real)
                         or not 0 <= value <= MAX_TEMPERATURE for value in values):
        raise OptionError(name, f"{{{name}}} must be a number from 0 to {MAX_TEMPERATURE} (0: greedy), or a non-empty "
                                f"list of them (the fallback ladder), not {values if len(values) != 1 else values[0]}")


def openai_ladder(first: float) -> tuple[float, ...]:
    """openai-whisper's ladder from its first temperature: up by 0.2 to 1.0 (just `first` when it is above 1)."""
    steps = int((1.0 - first) / TEMPERATURE_INCREMENT + 1e-6) if first <= 1.0 else 0
    return tuple(round(first + step * TEMPERATURE_INCREMENT, 6) for step in range(steps + 1))


@dataclass(frozen=True)
class Recipe:
    """The thresholds and ladder of openai's transcribe (None switches a test off)."""

    temperatures: tuple[float, ...] = (0.0,)  # one entry: no fallback
    compression_ratio_threshold: float | None = 2.4
    logprob_threshold: float | None = -1.0
    no_speech_threshold: float | None = 0.6
    silence_threshold: float | None = 0.8  # above it a window is silent whatever its log-probability
    best_of: int = 5
    prompt_reset_on_temperature: float = 0.5
    beam_size: int | None = None  # beam search at temperature 0 (openai's DecodingOptions); None: greedy
    patience: float | None = None  # with beam_size: finish after round(beam_size * patience) candidates (1.0)
    length_penalty: float | None = None  # with beam_size: None divides by the length, else the Google NMT penalty
    beam_algorithm: str = "openai"  # BEAM_ALGORITHMS: "ctranslate2" ranks by sum / length ** length_penalty

    def __post_init__(self):
        for name in ("patience", "length_penalty"):
            if self.beam_size is None and getattr(self, name) is not None:
                raise OptionError(name, f"{{{name}}} is a beam search option: give {{beam_size}} too")
        if self.beam_algorithm not in BEAM_ALGORITHMS:
            raise OptionError("beam_algorithm", f"{{beam_algorithm}} must be one of {', '.join(BEAM_ALGORITHMS)}, "
                                                f"not '{self.beam_algorithm}'")
        if self.beam_size is not None:
            _ = self.beam  # the algorithm's own checks
            LIMITS.check("beam_size", self.beam_size)
        check_temperatures(self.temperatures, "temperatures")
        LIMITS.check("best_of", self.best_of)
        for name in ("no_speech_threshold", "silence_threshold"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 1:
                raise OptionError(name, f"{{{name}}} must be in [0, 1], not {value}")

    @property
    def skip_threshold(self) -> float | None:
        """The no-speech probability above which a window is silent whatever its text (silence_threshold, with
        the no-speech test on): judged before any token is generated, as nothing the window would say is kept."""
        return self.silence_threshold if self.no_speech_threshold is not None else None

    @property
    def beam(self) -> BeamSearch | None:
        """How the temperature-0 try decodes: beam search, or None for greedy decoding."""
        if self.beam_size is None:
            return None
        return BEAM_ALGORITHMS[self.beam_algorithm](self.beam_size, self.patience, self.length_penalty)

    @property
    def scores_windows(self) -> bool:
        """Whether windows need their scores (a retry or a skip may depend on them)."""
        return len(self.temperatures) > 1 or self.no_speech_threshold is not None


@dataclass
class WindowResult:
    decoded: DecodedWindow
    temperature: float
    compression_ratio: float
    silent: bool  # judged to hold no speech: the caller skips it

    @property
    def avg_logprob(self) -> float | None:
        score = self.decoded.extras.score if self.decoded.extras else None
        return score.avg_logprob if score else None

    @property
    def no_speech_prob(self) -> float | None:
        score = self.decoded.extras.score if self.decoded.extras else None
        return score.no_speech_prob if score else None


def compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def decode_with_fallback(pipeline: WindowPipeline, windows: list[Window], recipe: Recipe, stats: DecodeStats,
                         decode: Callable[[list[Window]], list[DecodedWindow]]) -> list[WindowResult]:
    """Decode `windows` (rows of one call) with `decode` (the call's: its drafter and random source), retrying the
    ones that fail up the temperature ladder; every decode call's telemetry is added to `stats`."""
    if recipe.scores_windows:
        windows = [replace(window, score=True, silence_threshold=recipe.skip_threshold) for window in windows]
    tried: list[list[WindowResult]] = [[] for _ in windows]
    final: list[WindowResult | None] = [None] * len(windows)
    pending = list(range(len(windows)))
    for temperature in recipe.temperatures:
        if not pending:
            break
        rows = []
        for index in pending:
            window = windows[index]
            if temperature > 0:
                sampled = replace(window, sampling=Sampling(True, temperature))
                rows += [(index, sampled)] * recipe.best_of
            else:
                rows.append((index, replace(window, beam=recipe.beam) if recipe.beam else window))
        decoded = decode([window for _, window in rows])
        candidates: dict[int, list[WindowResult]] = {}
        for (index, _), row in zip(rows, decoded):
            stats.add(row.stats)
            ratio = compression_ratio(pipeline.text(row.tokens))
            candidates.setdefault(index, []).append(WindowResult(row, temperature, ratio, False))
        still_pending = []
        for index in pending:
            best = max(candidates[index], key=lambda result: result.avg_logprob or 0.0)
            tried[index].append(best)
            if _needs_fallback(best, recipe):
                still_pending.append(index)
            else:
                final[index] = best
        pending = still_pending
    for index in pending:  # every temperature failed: the likeliest of the not-too-repetitive tries
        threshold = recipe.compression_ratio_threshold
        readable = [result for result in tried[index] if threshold is None or result.compression_ratio <= threshold]
        best = max(readable or tried[index], key=lambda result: result.avg_logprob or 0.0)
        final[index] = replace(best, temperature=recipe.temperatures[-1])
    return [replace(result, silent=_is_silent(result, recipe)) for result in final]


def _needs_fallback(result: WindowResult, recipe: Recipe) -> bool:
    if _is_silent(result, recipe):
        return False
    too_repetitive = (recipe.compression_ratio_threshold is not None
                      and result.compression_ratio > recipe.compression_ratio_threshold)
    too_unlikely = (recipe.logprob_threshold is not None and result.avg_logprob is not None
                    and result.avg_logprob < recipe.logprob_threshold)
    return too_repetitive or too_unlikely


def _is_silent(result: WindowResult, recipe: Recipe) -> bool:
    return is_silent(result.no_speech_prob, result.avg_logprob, recipe)


def is_silent(no_speech_prob: float | None, avg_logprob: float | None, recipe: Recipe) -> bool:
    """openai's rule (no-speech probability above the threshold, unless the text is likely enough anyway), and
    no-speech probability above the silence threshold."""
    if recipe.no_speech_threshold is None or no_speech_prob is None:
        return False
    if recipe.silence_threshold is not None and no_speech_prob > recipe.silence_threshold:
        return True
    if recipe.logprob_threshold is not None and avg_logprob is not None and avg_logprob > recipe.logprob_threshold:
        return False
    return no_speech_prob > recipe.no_speech_threshold
