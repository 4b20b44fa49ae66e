"""The size benchmark's parts that need no size model: the tokenizer large-v3's shapes get, the projection by
acceptance, and its command line's errors."""

from __future__ import annotations

import time

import numpy as np
import pytest

from eval.bench import size_models, sizes


def test_large_v3_shapes_get_its_tokenizer_with_yue_and_the_specials_after_it_moved_up():
    base, large = size_models._tokenizer_json(51865), size_models._tokenizer_json(51866)
    base_ids = {token["content"]: token["id"] for token in base["added_tokens"]}
    large_ids = {token["content"]: token["id"] for token in large["added_tokens"]}
    assert large_ids["<|yue|>"] == 50358 and "<|yue|>" not in base_ids
    for name in ("<|translate|>", "<|transcribe|>", "<|notimestamps|>"):
        assert large_ids[name] == base_ids[name] + 1
    for name in ("<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|su|>"):
        assert large_ids[name] == base_ids[name]
    assert sorted(large_ids.values()) == list(range(50257, 50365))  # contiguous: 50365 + 1501 timestamps = 51866
    assert large["post_processor"]["special_tokens"]["<|notimestamps|>"]["ids"] == [50364]


def test_each_shape_is_its_own_cache_entry():
    checksums = {size_models.folder_checksum(shape) for shape in size_models.SHAPES.values()}
    assert len(checksums) == len(size_models.SHAPES)
    assert size_models.size_model_dir("small").parts[-2:] == ("size-models", "small")


def test_a_round_yields_one_token_at_no_acceptance_and_all_drafts_plus_one_at_full():
    assert sizes.rounds_yield(0.0, 5) == 1.0
    assert sizes.rounds_yield(1.0, 5) == 6.0
    assert sizes.rounds_yield(0.5, 2) == pytest.approx(1 + 0.5 + 0.25)


def test_the_projection_and_the_acceptance_that_reaches_a_speedup():
    costs = {"draft_step": 0.01, "verification": 0.06}
    # faster-whisper 10 s; ours 1 s besides 100 tokens; main step 0.05 s would give 6 s plain (1.67x)
    def speedup(acceptance):
        return sizes.projected_speedup(acceptance, costs, 5, 100, 1.0, 10.0)
    assert speedup(0.0) == pytest.approx(10.0 / (1.0 + 100 * 0.11))
    assert speedup(0.6) < speedup(0.8) < speedup(0.9)
    needed = sizes.acceptance_for(3.0, speedup)
    assert speedup(needed) == pytest.approx(3.0, rel=1e-6) and speedup(needed - 0.01) < 3.0
    assert sizes.acceptance_for(100.0, speedup) is None  # beyond even full acceptance


@pytest.mark.parametrize("arguments, message", [
    (["--shapes", "small,huge"], "unknown shape(s) huge"),
    (["--skip", "speed"], "unknown section(s) in --skip: speed"),
    (["--repeats", "0"], "--repeats must be at least 1"),
    (["--compute-types", ","], "--compute-types names none"),
])
def test_bad_arguments_are_one_line_and_exit_2(arguments, message, capsys):
    with pytest.raises(SystemExit) as exited:
        sizes.main(arguments)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and err.startswith("error:") and message in err


def test_the_builder_refuses_an_unknown_shape(capsys):
    with pytest.raises(SystemExit) as exited:
        size_models.main(["tiny"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.count("\n") == 1 and "unknown shape(s) tiny" in err


class _HalfMaker:
    """A model that makes half the tokens it is asked for plus two, as faster-whisper's CTranslate2 did here."""

    def __init__(self):
        self.asked = []

    def transcribe(self, samples, max_new_tokens, **options):
        from types import SimpleNamespace

        self.asked.append(max_new_tokens)
        return [SimpleNamespace(tokens=[7] * (max_new_tokens // 2 + 2))], None


def test_the_request_is_scaled_until_the_count_is_right():
    model = _HalfMaker()
    requested = sizes.requested_for(model, sizes.FreshWindows(), 100)
    assert sizes.forced_call(model, None, requested) == 100 and len(model.asked) <= 5
    assert sizes.requested_for(model, sizes.FreshWindows(), 300) == sizes.MAX_REQUEST  # more than 448 positions


def test_every_call_gets_another_window_and_every_system_the_same_ones():
    """ours keeps one call's encoding for the next call of the same audio: timed calls on one window would skip
    the encoder (it did: a large-v3 call of 100 tokens in less time than its encoder alone)."""
    first, second = sizes.FreshWindows(), sizes.FreshWindows()
    windows = [first() for _ in range(3)]
    assert not any(np.array_equal(a, b) for a, b in zip(windows, windows[1:]))
    assert all(np.array_equal(a, second()) for a in windows)


def test_a_variant_decodes_on_its_own_pipeline_not_on_the_model_it_shares_weights_with():
    """The drop-in decodes through its workers: a variant that kept the loaded model's workers ran every call at
    the loaded model's compute type (the int8 and default rows of a run timed float32 decoding)."""
    from asr_specdec.compat import WhisperModel

    loaded = WhisperModel("tiny.en", compute_type="float32", mode="off", cpu_threads=2)
    other = sizes.variant(loaded, "int8", "off")
    assert other.speculative.model is loaded.speculative.model  # the weights are shared
    assert other.speculative.pipeline.compute.name == "int8" and loaded.speculative.pipeline.compute.name == "float32"
    decoded = {}
    for name, model in (("loaded", loaded), ("variant", other)):
        original = model.speculative.decode_windows

        def spy(*arguments, name=name, original=original, **options):
            decoded[name] = decoded.get(name, 0) + 1
            return original(*arguments, **options)
        model.speculative.decode_windows = spy
    sizes.forced_call(other, sizes.noise(seconds=3.0), 5)
    assert decoded == {"variant": 1}


def test_ms_a_token_is_the_difference_of_the_calls_less_their_own_encoder_time():
    timing = sizes.Timing(encoder=3.0, whole=5.0, double=9.0, made=[100, 200], whole_decoding=1.0,
                          double_decoding=2.0)
    assert timing.per_token(100) == pytest.approx(0.01)  # not (9 - 5) / 100: the second call's encoder ran slower


def test_the_encoder_clock_counts_ours_encoder_inside_a_call_and_leaves_the_pipeline_working():
    from asr_specdec.compat import WhisperModel

    model = WhisperModel("tiny.en", compute_type="int8", mode="off", cpu_threads=2)
    clock = sizes.EncoderClock(model)
    started = time.perf_counter()
    assert sizes.forced_call(model, sizes.noise(seconds=3.0), 5) >= 1  # the call ends reading the encoder's pages
    assert 0 < clock.seconds < time.perf_counter() - started
    clock.seconds = 0.0
    sizes.forced_call(model, sizes.noise(seconds=3.0, seed=7), 5)
    assert clock.seconds > 0  # every call's encoder, not only the first's


class _Encodes:
    """faster-whisper's shape: `transcribe` runs `self.encode` once a window."""

    def __init__(self):
        self.encoded = 0

    def encode(self, features):
        self.encoded += 1
        return features

    def transcribe(self, samples, max_new_tokens, **options):
        from types import SimpleNamespace

        self.encode(samples)
        return [SimpleNamespace(tokens=[7] * max_new_tokens)], None


def test_the_encoder_clock_wraps_faster_whispers_encode_in_place():
    model = _Encodes()
    clock = sizes.EncoderClock(model)
    sizes.forced_call(model, None, 5)
    assert model.encoded == 1 and clock.seconds > 0


def test_pass_costs_are_timed_in_turn_so_a_drift_in_speed_reaches_every_pass_alike():
    order = []

    def timed_pass(name):
        def one_pass():
            order.append(name)
        return one_pass

    best = sizes.interleaved_best({name: timed_pass(name) for name in ("main_step", "draft_step", "verification")}, 3)
    assert order == ["main_step", "draft_step", "verification"] * 3
    assert set(best) == {"main_step", "draft_step", "verification"}
    assert all(0 <= seconds < 1 for seconds in best.values())


def test_the_pairs_fixed_part_is_the_call_less_its_tokens_at_the_measured_main_step():
    from eval.bench.sizes import fixed_part, projected_speedup

    costs = {"main_step": 0.028, "draft_step": 0.0035, "verification": 0.037}
    assert fixed_part(7.34, costs, 100) == pytest.approx(4.54)
    # plain decoding projects to the plain call itself: no drafts, every round one verified token at a step's cost
    plain = {"main_step": 0.028, "draft_step": 0.0, "verification": 0.028}
    assert projected_speedup(0.0, plain, 0, 100, fixed_part(7.34, plain, 100), 7.34) == pytest.approx(1.0)
