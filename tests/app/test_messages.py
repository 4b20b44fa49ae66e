"""app/messages.py: the library's errors, which name command-line flags, reach the page naming its controls."""

from __future__ import annotations

import re

import gradio as gr
import pytest

from app.handlers import shown_to_user
from app.messages import in_app_terms
from asr_specdec.whisper import SpeculativeWhisper
from asr_specdec.whisper.drafters import AssistantDrafter, QuantizedSelfDrafter
from asr_specdec.whisper.options import TranscribeOptions

from ..tiny_whisper import tiny_whisper

FLAG = re.compile(r"(?<![\w-])--[a-z]")


def message_shown_for(action) -> str:
    with pytest.raises(gr.Error) as raised, shown_to_user():
        action()
    return raised.value.message


def test_an_assistant_with_another_vocabulary_is_refused_naming_the_drafter_control():
    message = message_shown_for(lambda: AssistantDrafter(tiny_whisper(1, vocab=130), tiny_whisper(0)))
    assert "needs the same tokenizer" in message and "choose the drafter 'universal'" in message
    assert not FLAG.search(message), message


def test_a_missing_assistant_is_named_by_its_control():
    class Processor:
        tokenizer = None

    message = message_shown_for(lambda: SpeculativeWhisper((tiny_whisper(0), Processor()), mode="universal"))
    assert message == "drafter 'universal' needs an assistant model (the 'Assistant model' setting)"


def test_quantized_self_off_the_cpu_names_the_other_drafters():
    message = message_shown_for(lambda: QuantizedSelfDrafter(tiny_whisper(0).to("meta")))
    assert "choose the drafter 'assistant' or 'early-exit' on a GPU" in message
    assert not FLAG.search(message), message


def test_a_repetition_option_out_of_range_is_named_by_its_field():
    message = message_shown_for(lambda: TranscribeOptions(repetition_penalty=-1.0))
    assert message == "the 'Repetition penalty' setting must be a number > 0, not -1.0"
    message = message_shown_for(lambda: TranscribeOptions(no_repeat_ngram_size=-2))
    assert message == "the 'No repeat n-gram size' setting must be an integer >= 0, not -2"


@pytest.mark.parametrize("message, expected", [
    ("use --num-draft-tokens 4", "use the 'Draft tokens per round' setting 4"),
    ("set --compute-type int8", "set the 'Compute type' setting int8"),
    ("set --best-of 3", "set the 'best of' setting 3"),  # a flag the page does not offer
    ("num_draft_tokens must be between 1 and 16", "the 'Draft tokens per round' setting must be between 1 and 16"),
    ("patience needs beam_size", "patience needs beam_size"),  # only a range check's opening keyword is renamed
    ("a well-formed --- line; x--y", "a well-formed --- line; x--y"),
])
def test_any_flag_becomes_a_setting(message, expected):
    assert in_app_terms(message) == expected
