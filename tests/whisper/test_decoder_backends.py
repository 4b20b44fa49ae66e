"""The decoder's two backends behind one protocol (decoder_backend.py): each keeps keys in its own layout
(kv_cache.py) and reads the other's; the PyTorch path scores windows in a pass of their own (the same bits for
speculative and plain runs) and encodes a batch's windows in one call; an assistant keeps no encoder it never
runs. Tiny random models."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from asr_specdec.core.draft_length import DraftLength
from asr_specdec.whisper.drafters import AssistantDrafter
from asr_specdec.whisper.runtime import decoder as decoder_module
from asr_specdec.whisper.runtime.decoder import WhisperDecoderRunner, native_decoder_unavailable
from asr_specdec.whisper.runtime.kv_cache import blocked_keys, is_blocked, key_columns, row_keys
from asr_specdec.whisper.runtime.pipeline import Speculation

from ..tiny_whisper import encoder_output, tiny_whisper

MODEL = tiny_whisper(0, d_model=64)
NATIVE = native_decoder_unavailable(MODEL) is None
IDS = [[101, 110, 4, 9, 30, 2], [101, 110, 8, 8, 12, 40]]


def test_both_key_layouts_hold_the_same_keys():
    keys = torch.randn(2, 3, 37, 16)
    blocks, rows = blocked_keys(keys), row_keys(keys)
    assert is_blocked(blocks) and blocks.shape == (2, 3, 3, 16, 16)
    assert not is_blocked(rows) and rows.shape == (2, 3, 37, 16)
    for layout in (blocks, rows):
        assert torch.equal(key_columns(layout, 37), keys.transpose(2, 3))
        assert torch.equal(key_columns(layout, 20), keys[:, :, :20].transpose(2, 3))


def test_the_pytorch_backend_keeps_keys_in_rows_and_reads_views_of_them():
    runner = WhisperDecoderRunner(MODEL, native=False)
    assert runner.backend.name == "pytorch" and runner.native is None and not runner.backend.batch_invariant
    _, encoded = encoder_output(MODEL, 1)
    with torch.inference_mode():
        cache = runner.new_cache(encoded.expand(2, -1, -1))
        assert not is_blocked(cache.self_keys[0]) and not is_blocked(cache.cross_keys[0])
        assert key_columns(cache.cross_keys[0], cache.encoder_length).data_ptr() == cache.cross_keys[0].data_ptr()
        assert cache.self_keys[0].data_ptr() == cache.self_pairs[0].data_ptr()  # keys and values: views of a pair
        runner.feed_rows(cache, [IDS[0][:4], IDS[1][:2]], [0, 0])
        stepped = runner.feed_rows(cache, [IDS[0][4:], IDS[1][2:]], [4, 2])
        whole = runner.hidden_states(runner.new_cache(encoded.expand(2, -1, -1)), torch.tensor(IDS), 0)
    torch.testing.assert_close(stepped[0], whole[0, 4:], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(stepped[1], whole[1, 2:], atol=1e-5, rtol=1e-5)


@pytest.mark.skipif(not NATIVE, reason="the native kernels do not run here")
def test_each_backend_reads_the_other_backends_cross_states():
    native, pytorch = WhisperDecoderRunner(MODEL), WhisperDecoderRunner(MODEL, native=False)
    assert native.backend.name == "native" and native.backend.batch_invariant
    _, encoded = encoder_output(MODEL, 2)
    ids = torch.tensor(IDS[:1])
    with torch.inference_mode():
        native_states, torch_states = native.cross_attention_states(encoded), pytorch.cross_attention_states(encoded)
        assert is_blocked(native_states[0][0]) and not is_blocked(torch_states[0][0])
        own = native.forward(native.new_cache(encoded, cross_states=native_states), ids, 0)
        other = native.forward(native.new_cache(encoded, cross_states=torch_states), ids, 0)
        assert torch.equal(own, other)  # converted to blocks: the same bits
        own = pytorch.forward(pytorch.new_cache(encoded, cross_states=torch_states), ids, 0)
        other = pytorch.forward(pytorch.new_cache(encoded, cross_states=native_states), ids, 0)
        assert torch.equal(own, other)


def test_the_backend_is_chosen_in_one_place(monkeypatch):
    chosen = []
    original = decoder_module.choose_backend
    monkeypatch.setattr(decoder_module, "choose_backend", lambda *args: chosen.append(args[-1]) or original(*args))
    WhisperDecoderRunner(MODEL, native=False)
    assert chosen == [False]
    with pytest.raises(Exception, match="need the native CPU kernels"):
        WhisperDecoderRunner(MODEL, weights="int8", native=False)


def _pipeline(model):
    from asr_specdec.whisper.recipe.window_extras import recipe_analysis
    from asr_specdec.whisper.runtime.compute import ComputeType
    from asr_specdec.whisper.runtime.pipeline import WindowPipeline

    class Processor:  # the pipeline reads the tokenizer only for text, which these tests do not ask for
        tokenizer = None

    return WindowPipeline(model, Processor(), compute=ComputeType("float32", "float32"), analysis=recipe_analysis)


def test_the_pytorch_path_scores_in_a_pass_of_its_own_and_encodes_rows_in_one_call(monkeypatch):
    """Scores from a pass of their own (recorded hidden states may round differently in a speculative run on
    this path, see pipeline.py), the encoder once for the batch."""
    import asr_specdec.native as native
    from asr_specdec.whisper.runtime.pipeline import Window

    monkeypatch.setattr(native, "kernels", lambda: None)
    monkeypatch.setattr(native, "unavailable_reason", lambda: "PyTorch path under test")
    pipeline = _pipeline(tiny_whisper(3))
    assert pipeline.runner.backend.name == "pytorch"
    features = [encoder_output(pipeline.model, seed)[0] for seed in (4, 5)]
    windows = [Window(row, language_id=None, score=True, max_new_tokens=8) for row in features]
    with torch.inference_mode():
        expected = [pipeline.decode([window])[0] for window in windows]
    encoder_calls, score_passes = [], []
    encoder_call = type(pipeline.encoder).__call__
    monkeypatch.setattr(type(pipeline.encoder), "__call__",
                        lambda self, rows: encoder_calls.append(rows.shape[0]) or encoder_call(self, rows))
    hidden_states = pipeline.runner.hidden_states
    monkeypatch.setattr(pipeline.runner, "hidden_states",
                        lambda *args: score_passes.append(1) or hidden_states(*args))
    with torch.inference_mode():
        batch = pipeline.decode(windows)
    assert encoder_calls == [2] and len(score_passes) == len(windows)
    for alone, row in zip(expected, batch):
        assert row.tokens == alone.tokens
        assert row.extras.score.avg_logprob == pytest.approx(alone.extras.score.avg_logprob, abs=1e-4)
        assert row.extras.score.no_speech_prob == pytest.approx(alone.extras.score.no_speech_prob, abs=1e-4)


def test_the_pytorch_path_scores_a_speculative_run_with_plain_bits(monkeypatch):
    import asr_specdec.native as native
    from asr_specdec.whisper.runtime.pipeline import Window

    monkeypatch.setattr(native, "kernels", lambda: None)
    monkeypatch.setattr(native, "unavailable_reason", lambda: "PyTorch path under test")
    main = tiny_whisper(3)
    pipeline = _pipeline(main)
    window = Window(encoder_output(main, 4)[0], language_id=None, score=True, max_new_tokens=12)
    with torch.inference_mode():
        plain = pipeline.decode([window])[0]
        drafter = AssistantDrafter(tiny_whisper(3), main)  # the same weights: drafts get accepted
        speculative = pipeline.decode([window], Speculation(drafter, DraftLength(4)))[0]
    assert speculative.stats.accepted_tokens > 0
    assert speculative.tokens == plain.tokens
    assert speculative.extras.score == plain.extras.score  # exactly: a fallback decided on it decides the same


def test_an_assistant_keeps_no_encoder_it_never_runs():
    main = tiny_whisper(6)
    copy = tiny_whisper(6)  # the same weights: its encoder computes the main one's output
    other = tiny_whisper(7)
    encoder = weakref.ref(copy.model.encoder)
    drafter = AssistantDrafter(copy, main)
    assert drafter.shares_encoder and drafter.encoder is None
    del copy
    gc.collect()
    assert encoder() is None  # freed with the model: the drafter holds its decoder only
    assert AssistantDrafter(other, main).encoder is other.model.encoder


@pytest.mark.skipif(not NATIVE, reason="the native kernels do not run here")
@pytest.mark.parametrize("cross_dtype", [None, torch.bfloat16, torch.int8])
def test_beams_of_one_audio_read_one_copy_of_its_cross_states_with_the_same_bits(cross_dtype):
    """The native cache keeps one copy of an audio's cross-attention states for all its beams (rows listed twice
    by keep), compacts them when an audio leaves, and every row's numbers are those of a row with its own copy."""
    runner = WhisperDecoderRunner(MODEL, cross_dtype=cross_dtype)
    (_, first), (_, second) = encoder_output(MODEL, 1), encoder_output(MODEL, 2)
    audios = torch.cat([first, second])
    beams = torch.tensor([0, 0, 0, 1, 1])
    feeds = [IDS[0][:3], IDS[0][:2], IDS[1][:4], IDS[1][:3], IDS[0][:1]]
    with torch.inference_mode():
        shared = runner.new_cache(audios)
        shared.keep(beams, {})
        assert shared.cross_values[0].shape[0] == 2 and shared.cross_rows.tolist() == beams.tolist()
        own = runner.new_cache(audios[beams])
        assert own.cross_rows is None
        fed = [runner.feed_rows(cache, feeds, [0] * 5) for cache in (shared, own)]
        assert all(torch.equal(a, b) for a, b in zip(*fed))
        for cache in (shared, own):  # the first audio's beams leave
            cache.keep(torch.tensor([3, 4]), {})
        assert shared.cross_values[0].shape[0] == 1 and shared.cross_rows.tolist() == [0, 0]
        stepped = [runner.feed_rows(cache, [[7], [9]], [4, 3]) for cache in (shared, own)]
        assert all(torch.equal(a, b) for a, b in zip(*stepped))



def test_a_caches_first_layers_cut_every_per_layer_list_and_carry_every_other_field():
    from dataclasses import fields

    from asr_specdec.whisper.runtime.kv_cache import KVCache

    layers = 4
    values = {field.name: [torch.full((1,), float(index * 10 + layer)) for layer in range(layers)]
              for index, field in enumerate(fields(KVCache)) if field.name != "max_positions"}
    values.update(max_positions=448, shares_cross=True, cross_rows=torch.tensor([0], dtype=torch.int32))
    whole = KVCache(**values)
    first = whole.first_layers(2)
    for field in fields(KVCache):
        kept, own = getattr(first, field.name), getattr(whole, field.name)
        if isinstance(own, list):
            assert len(kept) == 2 and all(a is b for a, b in zip(kept, own[:2])), field.name
        else:
            assert kept is own, field.name
