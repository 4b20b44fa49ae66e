"""A window is encoded once however often it is decoded: best_of samples of one window share its encoding, and a
temperature fallback's retries take the encoding kept from the attempt before (the encoder is deterministic, so
the text is the same bits as encoding anew; faster-whisper encodes a window once too)."""

from __future__ import annotations

import numpy as np
import pytest

from asr_specdec.whisper import SpeculativeWhisper

pytestmark = pytest.mark.slow


class CountingEncoder:
    """The pipeline's encoder, counting its calls."""

    def __init__(self, encoder):
        self.encoder, self.calls = encoder, 0

    def __call__(self, features):
        self.calls += 1
        return self.encoder(features)

    def __getattr__(self, name):
        return getattr(self.encoder, name)


def test_a_window_retried_at_every_temperature_with_best_of_rows_is_encoded_once(tiny_en_dir, shared_audio):
    whisper = SpeculativeWhisper(str(tiny_en_dir), compute_type="float32")
    if not whisper.runner.backend.batch_invariant:
        pytest.skip("the PyTorch path encodes each call's rows in one batch")
    clip = str(shared_audio / "LJ002-0020.wav")
    # every attempt fails the log-probability rule, so all three temperatures run, the sampled ones as 3 rows each
    retried = {"temperature": (0.0, 0.5, 1.0), "best_of": 3, "logprob_threshold": 0.0, "seed": 0}
    counting = CountingEncoder(whisper.pipeline.encoder)
    whisper.pipeline.encoder = counting
    result = whisper.transcribe(clip, **retried)
    assert result.segments and result.segments[0].temperature == 1.0  # the last temperature was reached
    assert counting.calls == 1
    fresh = SpeculativeWhisper(str(tiny_en_dir), compute_type="float32")
    assert [(s.text, s.avg_logprob) for s in fresh.transcribe(clip, **retried).segments] == \
        [(s.text, s.avg_logprob) for s in result.segments]


def test_a_finished_call_keeps_its_encoding_without_the_cross_states(tiny_en_dir, shared_audio):
    """After a call the pipeline keeps the window's encoder output (a call on the same audio skips the encoder)
    but not its cross-attention states, which that call projects again: the same tokens and scores."""
    whisper = SpeculativeWhisper(str(tiny_en_dir), compute_type="float32")
    if not whisper.runner.backend.batch_invariant:
        pytest.skip("the PyTorch path keeps no encoding")
    clip = str(shared_audio / "LJ002-0020.wav")
    counting = CountingEncoder(whisper.pipeline.encoder)
    whisper.pipeline.encoder = counting
    first = whisper.transcribe(clip)
    kept = whisper.pipeline._kept_encoding
    assert kept is not None and kept[1] is not None and kept[2] is None
    again = whisper.transcribe(clip)
    assert counting.calls == 1
    assert again.tokens == first.tokens and [s.avg_logprob for s in again.segments] == \
        [s.avg_logprob for s in first.segments]


def test_a_finished_call_lets_the_encoders_mapped_packs_go_and_the_next_call_reads_them_back(tiny_en_dir,
                                                                                              shared_audio):
    """The int8 encoder's packs, read once a window, wait between calls in the page cache, not in the process: after a
    call this process holds almost none of them, an encoder pass maps them again, and the next call's text is the
    same. (Made in this process, the packs are mapped from the first load's spool; from the cache's store after.)"""
    from asr_specdec.whisper.runtime.encoder import native_int8_products
    from tests.resident import resident_kib_of

    whisper = SpeculativeWhisper(str(tiny_en_dir), compute_type="int8")
    products = whisper.pipeline.encoder.backend.products
    if products is None or not native_int8_products():
        pytest.skip("no native int8 encoder here: its weights are not packs mapped from disk")
    packs = [packed.packed for layer in products.layers for packed in layer.values()]
    pack_kib = sum(tensor.nbytes for tensor in packs) // 1024
    clip = str(shared_audio / "LJ002-0020.wav")
    first = whisper.transcribe(clip)
    assert resident_kib_of(packs) < pack_kib // 10
    whisper.pipeline.encoder(whisper.pipeline.features(np.zeros(16000, dtype=np.float32)))
    assert resident_kib_of(packs) > pack_kib // 2  # the measure sees them when they are held
    whisper.pipeline.forget_encoding()
    again = whisper.transcribe(clip)
    assert again.tokens == first.tokens and resident_kib_of(packs) < pack_kib // 10
