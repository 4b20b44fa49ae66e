"""Word error rate after Whisper's English text normaliser (transformers' own), computed by jiwer."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _english_normalizer():
    from transformers.models.whisper.english_normalizer import EnglishTextNormalizer

    # the British-to-American spelling table ships with the hub's tokenizer files only; without it,
    # "colour" and "color" count as different words
    return EnglishTextNormalizer({})


def normalize(text: str) -> str:
    return _english_normalizer()(text)


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(substitutions + deletions + insertions, reference words), both texts normalised first."""
    import jiwer

    reference, hypothesis = normalize(reference), normalize(hypothesis)
    words = len(reference.split())
    if words == 0:
        return len(hypothesis.split()), 0
    output = jiwer.process_words(reference, hypothesis if hypothesis.strip() else "")
    return output.substitutions + output.deletions + output.insertions, words


def wer(references: list[str], hypotheses: list[str]) -> float:
    """Corpus WER: total word errors over total reference words."""
    errors = words = 0
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        clip_errors, clip_words = word_errors(reference, hypothesis)
        errors, words = errors + clip_errors, words + clip_words
    return errors / words if words else 0.0


def ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def spread(values: list[float]) -> dict:
    """Median, quartiles and range of per-utterance values (None each when there are none)."""
    import numpy as np

    if not values:
        return {"median": None, "p25": None, "p75": None, "min": None, "max": None}
    p25, median, p75 = np.percentile(values, [25, 50, 75])
    return {"median": float(median), "p25": float(p25), "p75": float(p75), "min": float(min(values)),
            "max": float(max(values))}
