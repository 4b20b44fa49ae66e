"""The two options objects inside SpeculativeWhisper (what the model is, how to transcribe), and the mapping of
every front end's argument names into them (no model is loaded here)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace
from types import SimpleNamespace

import pytest
import torch

from asr_specdec.core.logits import Sampling
from asr_specdec.core.modes import default_drafter
from asr_specdec.errors import SpecdecError
from asr_specdec.whisper.arguments import call_options, constructor_options
from asr_specdec.whisper.model_options import ModelOptions
from asr_specdec.whisper.options import TranscribeOptions
from asr_specdec.whisper.recipe.fallback import DEFAULT_TEMPERATURES


def test_one_default_drafter_the_projects():
    assert ModelOptions().resolved_drafter("cpu")[0] == default_drafter("cpu")[0] == "quantized-self"
    assert ModelOptions(assistant="tiny.en").resolved_drafter("cpu")[0] == "assistant"
    assert ModelOptions(assistant="x", assistant_tokenizer=object()).resolved_drafter("cpu")[0] == "universal"
    assert ModelOptions(mode="off", assistant="tiny.en").resolved_drafter("cpu")[0] == "off"
    model, _ = constructor_options("base")
    assert model.mode is None and model.resolved_drafter("cpu")[0] == "quantized-self"


def test_the_options_are_frozen_and_checked():
    with pytest.raises(FrozenInstanceError):
        TranscribeOptions().language = "en"
    with pytest.raises(FrozenInstanceError):
        ModelOptions().mode = "off"
    with pytest.raises(SpecdecError, match="unknown mode 'fast'"):
        ModelOptions(mode="fast")
    with pytest.raises(SpecdecError, match="draft schedule"):
        ModelOptions(draft_schedule="sometimes")
    with pytest.raises(SpecdecError, match="long-form mode 'middle'"):
        TranscribeOptions(long_form="middle")
    with pytest.raises(SpecdecError, match="beam search"):
        TranscribeOptions(sampling=Sampling(do_sample=True)).with_overrides(beam_size=5)
    for bad in ({"repetition_penalty": 0}, {"repetition_penalty": "1.2"}, {"no_repeat_ngram_size": -1},
                {"no_repeat_ngram_size": 2.0}):
        with pytest.raises(SpecdecError, match=next(iter(bad))):
            TranscribeOptions().with_overrides(**bad)
    repeats = TranscribeOptions().with_overrides(repetition_penalty=1.1, no_repeat_ngram_size=3)
    assert (repeats.repetition_penalty, repeats.no_repeat_ngram_size) == (1.1, 3)
    for bad in (0, 31, -5, 10.5, "10", True):  # whole seconds up to Whisper's 30-s window
        with pytest.raises(SpecdecError, match="chunk_length must be a whole number of seconds from 1 to 30") as error:
            TranscribeOptions().with_overrides(chunk_length=bad)
        assert "\n" not in str(error.value)
    assert TranscribeOptions().with_overrides(chunk_length=10).chunk_length == 10


def test_transformers_and_openai_names_map_into_the_options():
    model, options = constructor_options(
        "base", draft_model="tiny.en", num_assistant_tokens=5, num_assistant_tokens_schedule="constant",
        assistant_confidence_threshold=0.3, dtype=torch.bfloat16, return_timestamps=True,
        condition_on_prev_tokens=True, temperature=[0.0, 0.5], log_prob_threshold=-2.0, language="fr",
        max_new_tokens=20)
    assert (model.assistant, model.num_draft_tokens, model.draft_schedule, model.confidence_threshold,
            model.compute_type) == ("tiny.en", 5, "constant", 0.3, "bfloat16")
    assert model.draft_length().schedule == "fixed"  # transformers' "constant"
    assert model.resolved_drafter("cpu")[0] == "assistant"
    assert options.timestamps is True and options.condition_on_previous_text is True
    assert options.recipe.temperatures == (0.0, 0.5) and options.recipe.logprob_threshold == -2.0
    assert options.sampling == Sampling() and options.language == "fr" and options.max_new_tokens == 20

    lookup, _ = constructor_options("base", prompt_lookup_num_tokens=3, num_draft_tokens=9)
    assert (lookup.mode, lookup.num_draft_tokens) == ("prompt-lookup", 3)
    early, _ = constructor_options("base", assistant_early_exit=2)
    assert (early.mode, early.early_exit_layer) == ("early-exit", 2)
    heuristic, sampled = constructor_options("base", "off", dynamic=True, do_sample=True, temperature=0.7, seed=4)
    assert heuristic.mode == "off" and heuristic.draft_length().schedule == "heuristic"
    assert sampled.sampling == Sampling(True, 0.7) and sampled.seed == 4
    _, fallback = constructor_options("base", temperature_fallback=True, vad_parameters={"threshold": 0.3})
    assert fallback.recipe.temperatures == DEFAULT_TEMPERATURES and fallback.vad_options.threshold == 0.3
    with pytest.raises(SpecdecError, match="unknown transcription option"):
        constructor_options("base", word_timestamp=True)


def test_a_call_overrides_a_copy():
    _, defaults = constructor_options("base", language="en", timestamps=False, long_form="chunked")
    same = call_options(defaults)
    assert same == defaults
    call = call_options(defaults, language="de", return_timestamps=True, temperature=0.4, word_timestamps=True)
    assert (call.language, call.timestamps, call.long_form, call.word_timestamps) == ("de", True, "chunked", True)
    assert call.recipe.temperatures == (0.4,)  # openai's single temperature: sample at it
    assert call_options(defaults, temperature=0).recipe == defaults.recipe  # 0: greedy, the ladder kept
    assert defaults.language == "en" and defaults.timestamps is False  # the transcriber's own are untouched
    assert replace(defaults, seed=3).seed == 3


def test_the_command_line_maps_into_the_same_options():
    from asr_specdec.cli.transcribe import build_parser
    from asr_specdec.cli.transcriber_arguments import model_options, transcribe_options

    args = build_parser().parse_args(["a.wav", "--format", "srt", "--dynamic", "--beam-size", "2", "--language",
                                      "en", "--early-exit-layer", "1", "--dtype", "float32", "--device", "cpu"])
    options = transcribe_options(args)
    assert options.timestamps is True and options.recipe.beam_size == 2 and options.language == "en"
    model = model_options(args, "base", "tiny.en", "early-exit")
    assert model == ModelOptions(main="base", mode="early-exit", draft_schedule="heuristic", early_exit_layer=1,
                                 device="cpu", compute_type="float32")  # no assistant for a mode that needs none
    assert transcribe_options(SimpleNamespace(**{**vars(args), "format": "text"})).timestamps is None
    assert transcribe_options(build_parser().parse_args(["a.wav", "--chunk-length", "15"])).chunk_length == 15


def test_each_front_end_with_nothing_set_gives_exactly_the_default_options():
    """The defaults are written once, on the options objects: a front end given nothing builds exactly them."""
    from app.settings import DecodeOptions, RecipeChoices
    from asr_specdec.cli import serve, transcribe
    from asr_specdec.cli.recipe_arguments import check_recipe_arguments
    from asr_specdec.cli.transcriber_arguments import model_options, transcribe_options
    from asr_specdec.server.forms import AudioRequest

    mode = None  # the project's default, decided by the transcriber with the model loaded
    expected_model = ModelOptions(main="base", mode=mode, device="cpu")
    for args in (transcribe.build_parser().parse_args(["a.wav"]), serve.build_parser().parse_args([])):
        check_recipe_arguments(args)
        assert transcribe_options(args) == TranscribeOptions()
        assert model_options(SimpleNamespace(**{**vars(args), "device": "cpu"}), "base", None, mode) == expected_model
    page = DecodeOptions("base")
    assert page.transcribe_options().with_overrides(**RecipeChoices().as_arguments()) == TranscribeOptions()
    assert page.model_options("base", None, "cpu") == expected_model
    request = AudioRequest(audio=b"", filename=None, model="base", task="transcribe")
    assert request.decoding == {}
    assert call_options(TranscribeOptions(), language=request.language, task=request.task,
                        timestamps=request.timestamps, temperature=request.temperature,
                        **request.decoding) == TranscribeOptions()



def test_temperature_means_one_thing_in_the_constructor_and_in_a_call():
    for temperature in (0, 0.0, 0.6, (0.0, 0.4)):
        _, built = constructor_options("base", temperature=temperature)
        assert built == call_options(TranscribeOptions(), temperature=temperature), temperature
    assert constructor_options("base", temperature=0)[1] == TranscribeOptions()
    assert constructor_options("base", temperature=0.6)[1].recipe.temperatures == (0.6,)
    _, sampled = constructor_options("base", do_sample=True, temperature=0.6)  # transformers' pair
    assert sampled.sampling == Sampling(True, 0.6) and sampled.recipe.temperatures == (0.0,)
    assert constructor_options("base", do_sample=True)[1].sampling == Sampling(True, 1.0)


def test_every_mode_but_off_has_a_drafter_module():
    from asr_specdec.core.modes import MODES
    from asr_specdec.whisper.drafters import BUILDERS, build_drafter

    assert set(BUILDERS) == set(MODES) - {"off"}
    assert build_drafter("off", None) is None
    assert build_drafter("prompt-lookup", None).name == "prompt-lookup"
