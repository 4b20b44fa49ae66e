"""Batched speculative transcription: many utterances (or 30-s windows of long audio) decoded together.

Design, and why every row stays exact:
- One engine loop (core.engine.generate_batch) serves the batch, through the window pipeline
  (pipeline.py) that one utterance uses too. Each round every row drafts, the main decoder
  verifies all rows in ONE pass, and each row accepts its own number of draft tokens: no row waits for the
  slowest acceptor and no draft is thrown away because another row disagreed.
- KV cache: static buffers [batch, heads, positions + 1, head_dim] per layer, with a length per row
  instead of a shared one. A pass feeds row b its unverified tokens at its own positions start_b..; rows
  are padded to the longest feed, keys and values are scattered to each row's own positions, and a per-row
  causal mask lets token i of row b attend to positions <= start_b + i only (decoder.py). Slots past a row's
  valid length (rejected drafts, padding) are never read before the pass that reaches them overwrites them,
  so rollback after a rejection is free and no row is ever recomputed. Padding that would fall past the
  model's last position goes to one scratch slot beyond it.
- A drafter keeps the same layout for its own cache (the int8 self-drafter and the assistant) or shares
  the main cache's first layers (early exit). Rows that do not draft in a step get one padding token in the
  scratch slot, so a step is one batched pass whatever the rows are doing.
- Rows that finish (end-of-text, their own length limit) leave the batch: every cache is compacted to the
  remaining rows; tensors shared between the main model and the drafter (the cross-attention keys/values)
  are compacted once and stay shared (KVCache.keep), so speculation adds no copy of them.
- Each row's encoder output and cross-attention states are computed row by row (the encoder is
  compute-bound, so batching it buys little) and are therefore bit-identical to decoding the row alone. The
  decoder passes are batched: their arithmetic can differ from a one-row pass in the last float bits, so a
  token can flip only at a true near-tie of the top two logits.
"""

from __future__ import annotations

from ..core.stats import DecodeStats
from .io import audio as audio_io
from .io.formats import Segment
from .recipe.fallback import Recipe, decode_with_fallback
from .result import TranscriptionResult
from .runtime.pipeline import Window, WindowPipeline


def transcribe_batch(pipeline: WindowPipeline, audios: list, sample_rate: int | None = None,
                     language: str | None = None, batch_size: int = 8, generator=None,
                     labels: dict | None = None, recipe: Recipe | None = None,
                     repetition_penalty: float = 1.0, no_repeat_ngram_size: int = 0,
                     chunk_length: int | None = None) -> list[TranscriptionResult]:
    """Transcribe every audio (path, bytes or array), `batch_size` windows at a time. Audio over 30 s (over
    `chunk_length` seconds when given) is cut at quiet points into windows, which are decoded as rows of the batch
    like short utterances (the chunked long-form mode). Returns one TranscriptionResult per audio, in order,
    carrying `labels` (mode, main_model, assistant_model); each result's times are its share of the batched
    passes, so they add up to the whole run. With a `recipe` (fallback.py), windows judged silent give no text and
    failing windows are retried; every window decodes under the repetition rules given (core/logits.py)."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    samples = [audio_io.load_audio(audio, sample_rate=sample_rate) for audio in audios]
    language_id = pipeline.tokens.language_token(language) if language and pipeline.tokens.multilingual else None
    windows = [(index, offset, window) for index, audio in enumerate(samples)
               for offset, window in audio_io.split_long_audio(
                   audio, max_seconds=pipeline.chunk_samples(chunk_length) / audio_io.SAMPLE_RATE)]
    decoded, silent = [], []
    for begin in range(0, len(windows), batch_size):
        group = [Window(pipeline.features(window), language_id, repetition_penalty=repetition_penalty,
                        no_repeat_ngram_size=no_repeat_ngram_size)
                 for _, _, window in windows[begin:begin + batch_size]]
        if recipe is None:
            decoded += pipeline.decode(group, generator)
            silent += [False] * len(group)
            continue
        results = decode_with_fallback(pipeline, group, recipe, generator, DecodeStats())
        decoded += [result.decoded for result in results]
        silent += [result.silent for result in results]

    results = []
    for index, audio in enumerate(samples):
        rows = [(offset, window, row, quiet) for (owner, offset, window), row, quiet in zip(windows, decoded, silent)
                if owner == index]
        stats, segments, window_tokens, detected, probability = DecodeStats(), [], [], None, None
        for offset, window, row, quiet in rows:
            stats.add(row.stats)
            window_tokens.append(row.tokens)
            if detected is None and row.detected_language is not None:
                detected, probability = row.detected_language, row.language_probability
            text = "" if quiet else pipeline.segment_text(row.tokens)
            if text.strip():
                segments.append(Segment(round(offset, 3), round(offset + audio_io.duration_seconds(window), 3), text))
        if language:
            detected, probability = language, 1.0
        elif not pipeline.tokens.multilingual:
            detected, probability = "en", 1.0
        results.append(TranscriptionResult(
            text="".join(segment.text for segment in segments), segments=segments, window_tokens=window_tokens,
            stats=stats, language=detected, duration=audio_io.duration_seconds(audio), language_probability=probability,
            **(labels or {})))
    return results
