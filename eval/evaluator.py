"""The unit of work both engines share: models loaded once, then one utterance in, one row per variant out,
the variants run back to back on the same samples so that machine drift hits them all alike."""

from __future__ import annotations

import time
import zlib

from asr_specdec.errors import SpecdecError
from asr_specdec.whisper.io.audio import load_audio

from .rows import failed_row, ok_row, score_utterance
from .settings import EvalSettings
from .sources import Utterance
from .transcribers import build_transcribers


def describe_failure(error: Exception) -> str:
    if isinstance(error, SpecdecError):
        return " ".join(str(error).split())
    return f"unexpected {type(error).__name__}: {' '.join(str(error).split())}"[:500]


class UtteranceEvaluator:
    def __init__(self, settings: EvalSettings):
        import torch

        if settings.threads:
            torch.set_num_threads(settings.threads)
        torch.manual_seed(settings.seed)
        self.settings = settings
        self.variants = settings.variants()
        self.transcribers = build_transcribers(settings, self.variants)
        self.warm = not settings.warmup

    def warm_up(self, samples) -> None:
        """First calls pay one-off costs (allocation, quantisation kernels); keep them out of the timings."""
        self.warm = True
        for transcriber in self.transcribers.values():
            try:
                transcriber.transcribe(samples)
            except Exception:  # the timed run on these samples reports the failure as a row
                pass

    def _order(self, utterance_id: str) -> list:
        # a fixed order would always give the same variant the warm caches left by its predecessor
        shift = zlib.crc32(utterance_id.encode()) % len(self.variants)
        return self.variants[shift:] + self.variants[:shift]

    def evaluate(self, utterance: Utterance) -> list[dict]:
        try:
            samples = load_audio(utterance.audio)
        except Exception as error:
            reason = describe_failure(error)
            return score_utterance([failed_row(utterance.id, variant, utterance.reference, reason)
                                    for variant in self.variants])
        if not self.warm:
            self.warm_up(samples)
        rows = {}
        for variant in self._order(utterance.id):
            try:
                started = time.perf_counter()
                result = self.transcribers[variant.label].transcribe(samples)
                seconds = time.perf_counter() - started
                rows[variant.label] = ok_row(utterance.id, variant, utterance.reference, result, seconds)
            except Exception as error:  # one variant failing on one clip must not end a long run
                rows[variant.label] = failed_row(utterance.id, variant, utterance.reference, describe_failure(error))
        return score_utterance([rows[variant.label] for variant in self.variants])
