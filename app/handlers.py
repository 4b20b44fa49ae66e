"""What the page's controls do: decode options in, component values out, errors as one line in the page's
own terms."""

from __future__ import annotations

import logging
import tempfile
from contextlib import contextmanager
from pathlib import Path

import gradio as gr

from asr_specdec.errors import SpecdecError

from .compute_guide import compute_help
from .downloads import download_stem, write_comparison, write_downloads
from .drafter_guide import mode_help
from .languages import AUTO, language_choices, language_info, task_choices
from .messages import error_in_app_terms
from .pairing import assistant_info
from .segments import segments_html
from .service import TranscriptionService
from .settings import DecodeOptions, RecipeChoices
from .views import (
    COMPARISON_HEADERS,
    TELEMETRY_HEADERS,
    comparison_rows,
    comparison_summary_html,
    summary_html,
    table_html,
    telemetry_rows,
    token_highlights,
)

log = logging.getLogger(__name__)


@contextmanager
def shown_to_user():
    """Errors reach the page as one line: the user's own mistakes in the page's terms, our bugs only in the
    server log."""
    try:
        yield
    except gr.Error:
        raise
    except SpecdecError as error:
        raise gr.Error(error_in_app_terms(error), print_exception=False) from None
    except Exception:
        log.exception("unexpected error while handling a request")
        raise gr.Error("unexpected server error; the details are in the server log", print_exception=False) from None


def options_from(main, mode, assistant, language, task, draft_tokens, dynamic, compute_type="auto", *recipe
                 ) -> tuple[DecodeOptions, RecipeChoices]:
    """The page's settings, in the order of Controls.decoding: (which decoder, what this call asks of it)."""
    options = DecodeOptions(main, mode, assistant or None, int(draft_tokens), bool(dynamic),
                            None if language in (AUTO, None, "") else language, task, compute_type or "auto")
    return options, recipe_from(*recipe)


REPETITION_PENALTY, NO_REPEAT_NGRAM_SIZE = RecipeChoices.repetition_penalty, RecipeChoices.no_repeat_ngram_size
SPEAKERS = RecipeChoices.speakers


def recipe_from(word_timestamps=False, vad_filter=False, initial_prompt="", hotwords="", beam_size=0,
                repetition_penalty=REPETITION_PENALTY, no_repeat_ngram_size=NO_REPEAT_NGRAM_SIZE,
                speakers=SPEAKERS) -> RecipeChoices:
    # an emptied number field is the option's default; any number, in range or not, goes on to the library's check
    return RecipeChoices(bool(word_timestamps), bool(vad_filter), initial_prompt or "", hotwords or "",
                         int(beam_size or 0),
                         REPETITION_PENALTY if repetition_penalty is None else float(repetition_penalty),
                         NO_REPEAT_NGRAM_SIZE if no_repeat_ngram_size is None else no_repeat_ngram_size,
                         str(speakers or SPEAKERS))


class Handlers:
    def __init__(self, service: TranscriptionService):
        self.service = service
        self._downloads = tempfile.TemporaryDirectory(prefix="asr-specdec-downloads-")  # removed with the app

    def _options(self, decoding: tuple) -> tuple[DecodeOptions, RecipeChoices, str | None]:
        """The request's options, paired so that they work, and the note saying what had to change."""
        options, recipe = options_from(*decoding)
        options, note = self.service.paired(options)
        if note:
            gr.Warning(note)
        return options, recipe, note

    # the API's parameter names are these functions' own, in the order of Controls.decoding
    def transcribe(self, audio, main, mode, assistant, language, task, draft_tokens, dynamic, compute_type="auto",
                   word_timestamps=False, vad_filter=False, initial_prompt="", hotwords="", beam_size=0,
                   repetition_penalty=REPETITION_PENALTY, no_repeat_ngram_size=NO_REPEAT_NGRAM_SIZE, speakers=SPEAKERS,
                   progress=gr.Progress()):  # noqa: B008 (gradio finds its progress bar by this default)
        """A file upload: (transcript, summary, segments, token highlights, telemetry, downloads)."""
        decoding = (main, mode, assistant, language, task, draft_tokens, dynamic, compute_type, word_timestamps,
                    vad_filter, initial_prompt, hotwords, beam_size, repetition_penalty, no_repeat_ngram_size,
                    speakers)
        return self._transcribe(audio, decoding, progress, recorded=False, audio_elem_id="file-audio")

    def transcribe_recording(self, audio, main, mode, assistant, language, task, draft_tokens, dynamic,
                             compute_type="auto", word_timestamps=False, vad_filter=False, initial_prompt="",
                             hotwords="", beam_size=0, repetition_penalty=REPETITION_PENALTY,
                             no_repeat_ngram_size=NO_REPEAT_NGRAM_SIZE, speakers=SPEAKERS,
                             progress=gr.Progress()):  # noqa: B008
        """A microphone recording: the same outputs, downloads named by the time of the recording."""
        decoding = (main, mode, assistant, language, task, draft_tokens, dynamic, compute_type, word_timestamps,
                    vad_filter, initial_prompt, hotwords, beam_size, repetition_penalty, no_repeat_ngram_size,
                    speakers)
        return self._transcribe(audio, decoding, progress, recorded=True, audio_elem_id="mic-audio")

    def _transcribe(self, audio, decoding: tuple, progress, recorded: bool, audio_elem_id: str):
        with shown_to_user():
            options, recipe, note = self._options(decoding)
            result = self.service.transcribe(audio, options, lambda done, what: progress(done, desc=what),
                                             timestamps=True, recipe=recipe)
            downloads = write_downloads(result, Path(self._downloads.name), download_stem(audio, recorded))
            return (result.text.strip(), summary_html(result, self._language_source(options), note),
                    segments_html(result.segments, audio_elem_id),
                    token_highlights(result, self.service.tokenizer(options.main)),
                    table_html(TELEMETRY_HEADERS, telemetry_rows(result)), [str(path) for path in downloads])

    def compare(self, audio, main, mode, assistant, language, task, draft_tokens, dynamic, compute_type="auto",
                word_timestamps=False, vad_filter=False, initial_prompt="", hotwords="", beam_size=0,
                repetition_penalty=REPETITION_PENALTY, no_repeat_ngram_size=NO_REPEAT_NGRAM_SIZE, speakers=SPEAKERS,
                progress=gr.Progress()):  # noqa: B008
        """(summary, comparison table, plain transcript, speculative transcript, speculative token highlights,
        downloads)."""
        with shown_to_user():
            options, recipe, note = self._options((main, mode, assistant, language, task, draft_tokens, dynamic,
                                                   compute_type, word_timestamps, vad_filter, initial_prompt,
                                                   hotwords, beam_size, repetition_penalty,
                                                   no_repeat_ngram_size, speakers))
            comparison = self.service.compare(audio, options, lambda done, what: progress(done, desc=what),
                                              timestamps=True, recipe=recipe)
            plain, speculative = comparison.plain, comparison.speculative
            rows = comparison_rows(comparison)
            downloads = write_comparison(plain, speculative, rows, Path(self._downloads.name),
                                         download_stem(audio, recorded=False))
            return (comparison_summary_html(comparison, self._language_source(options), note),
                    table_html(COMPARISON_HEADERS, rows), plain.text.strip(), speculative.text.strip(),
                    token_highlights(speculative, self.service.tokenizer(options.main)),
                    [str(path) for path in downloads])

    def _language_source(self, options: DecodeOptions) -> str:
        if not self.service.profile(options.main).multilingual:
            return "English-only model"
        return "detected" if options.language is None else "chosen"

    def main_changed(self, main, mode, language, task):
        """Languages, tasks and assistants that fit the newly chosen main model."""
        with shown_to_user():
            profile = self.service.profile(main)
            languages = language_choices(profile.languages)
            tasks = task_choices(profile.multilingual)
            return (gr.update(choices=languages, value=_kept(language, languages),
                              info=language_info(main, profile.languages)),
                    gr.update(choices=tasks, value=_kept(task, tasks)), self._assistant_update(main, mode))

    def mode_changed(self, main, mode):
        """The chosen drafter explained, and the assistants that can draft in it."""
        with shown_to_user():
            return gr.update(info=mode_help(mode, self.service.settings.device)), self._assistant_update(main, mode)

    def compute_changed(self, compute_type):
        """The chosen compute type explained, with how it measured."""
        with shown_to_user():
            return gr.update(info=compute_help(compute_type, self.service.settings.device))

    def _assistant_update(self, main, mode):
        fitting = self.service.assistants(main, mode)
        if not fitting:
            return gr.update(visible=False)
        default = self.service.settings.default_assistant
        return gr.update(visible=True, choices=fitting, value=default if default in fitting else fitting[0],
                         info=assistant_info(main, mode, fitting))


def _kept(value, choices: list[tuple[str, str]]) -> str:
    """`value` when the new choices still hold it, else the first choice."""
    values = [choice for _, choice in choices]
    return value if value in values else values[0]
