"""app/pairing.py and app/profiles.py: assistant mode is offered only with assistants of the main model's
vocabulary, and a pair that does not fit drafts in universal mode with a note instead of failing."""

from __future__ import annotations

import pytest

from app.pairing import assistant_choices, paired
from app.profiles import profile_from_directory
from app.settings import DecodeOptions

MODELS = ("base", "tiny.en", "small")
VOCABULARY = {"base": 51865, "small": 51865, "tiny.en": 51864}.__getitem__


def test_assistant_mode_offers_only_models_with_the_main_vocabulary():
    assert assistant_choices("base", "assistant", MODELS, VOCABULARY) == ["base", "small"]
    assert assistant_choices("tiny.en", "assistant", MODELS, VOCABULARY) == ["tiny.en"]


def test_universal_mode_offers_every_other_model_and_other_modes_none():
    assert assistant_choices("base", "universal", MODELS, VOCABULARY) == ["tiny.en", "small"]
    assert assistant_choices("base", "universal", ("base",), VOCABULARY) == ["base"]
    assert assistant_choices("base", "quantized-self", MODELS, VOCABULARY) == []


def test_a_pair_with_another_vocabulary_drafts_in_universal_mode_and_says_so():
    options, note = paired(DecodeOptions("base", "assistant", "tiny.en"), MODELS, VOCABULARY)
    assert options == DecodeOptions("base", "universal", "tiny.en")
    assert note.startswith("tiny.en has another tokenizer than base, so it drafted in universal mode")


@pytest.mark.parametrize("options", [DecodeOptions("base", "assistant", "small"),
                                     DecodeOptions("base", "universal", "tiny.en"),
                                     DecodeOptions("base", "prompt-lookup", "tiny.en")])
def test_pairs_that_fit_are_left_alone(options):
    assert paired(options, MODELS, VOCABULARY) == (options, None)


def test_a_missing_assistant_is_the_preferred_one_when_it_fits_else_the_first_that_does():
    assert paired(DecodeOptions("base", "universal"), MODELS, VOCABULARY, "small")[0].assistant == "small"
    assert paired(DecodeOptions("base", "assistant"), MODELS, VOCABULARY, "tiny.en")[0].assistant == "base"


@pytest.mark.slow  # converts the packs on a fresh machine
def test_the_offline_packs_pair_as_the_library_requires(tiny_en_dir, base_dir):
    """Read from the packs' own config files: base is multilingual, tiny.en English-only, and their
    vocabularies differ, so each is offered assistant mode only with itself."""
    profiles = {"tiny.en": profile_from_directory(tiny_en_dir), "base": profile_from_directory(base_dir)}
    assert not profiles["tiny.en"].multilingual and len(profiles["base"].languages) == 99
    vocabulary = {spec: profile.vocab_size for spec, profile in profiles.items()}.__getitem__
    for main in profiles:
        assert assistant_choices(main, "assistant", ("base", "tiny.en"), vocabulary) == [main]
