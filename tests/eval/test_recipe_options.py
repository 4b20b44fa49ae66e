"""The eval takes the transcription recipe's options and carries them, as JSON in its settings, to every
SpeculativeWhisper it builds."""

from __future__ import annotations

import json

import pytest

from asr_specdec.errors import SpecdecError
from asr_specdec.whisper.arguments import recipe_arguments
from asr_specdec.whisper.options import TranscribeOptions
from asr_specdec.whisper.recipe.fallback import DEFAULT_TEMPERATURES
from eval.cli_args import recipe_settings
from eval.run import build_parser


def options_from(argv: list[str]) -> TranscribeOptions:
    args = build_parser().parse_args(["--dataset", "x.jsonl", *argv])
    return TranscribeOptions().with_overrides(**recipe_arguments(json.loads(recipe_settings(args))))


def test_recipe_options_reach_the_transcribers():
    options = options_from(["--word-timestamps", "--vad", "--vad-min-silence-ms", "500", "--temperature-fallback",
                            "--initial-prompt", "Dashwood", "--no-speech-threshold", "off"])
    assert options.word_timestamps and options.vad_filter and options.vad_options.min_silence_duration_ms == 500
    assert options.recipe.temperatures == DEFAULT_TEMPERATURES and options.recipe.no_speech_threshold is None
    assert options.initial_prompt == "Dashwood"
    repeats = options_from(["--repetition-penalty", "1.3", "--no-repeat-ngram-size", "3"])
    assert (repeats.repetition_penalty, repeats.no_repeat_ngram_size) == (1.3, 3)
    defaults = options_from([])
    assert defaults == TranscribeOptions()


def test_bad_recipe_values_are_user_errors():
    from asr_specdec.cli.commands import error_line

    with pytest.raises(SpecdecError) as refused:
        options_from(["--best-of", "0"])
    assert error_line(refused.value, build_parser()).startswith("--best-of must be")
