"""What the page's buttons do: decode options from the controls in, component values out, errors as one line."""

from __future__ import annotations

import logging
import tempfile
from contextlib import contextmanager
from pathlib import Path

import gradio as gr

from asr_specdec.errors import SpecdecError

from .service import TranscriptionService
from .settings import DecodeOptions
from .views import comparison_rows, telemetry_rows, token_highlights, write_transcript

SUBTITLES = ("srt", "vtt")  # download formats decoded with timestamps, so that cues carry the model's times

log = logging.getLogger(__name__)


@contextmanager
def shown_to_user():
    """Errors reach the page as one line: the user's own mistakes verbatim, our bugs only in the server log."""
    try:
        yield
    except gr.Error:
        raise
    except SpecdecError as error:
        raise gr.Error(str(error), print_exception=False) from None
    except Exception:
        log.exception("unexpected error while handling a request")
        raise gr.Error("unexpected server error; the details are in the server log", print_exception=False) from None


def options_from(main, mode, assistant, draft_tokens, dynamic, language, task) -> DecodeOptions:
    return DecodeOptions(main, mode, assistant, int(draft_tokens), bool(dynamic),
                         None if language == "auto" else language, task)


class Handlers:
    def __init__(self, service: TranscriptionService):
        self.service = service
        self._downloads = tempfile.TemporaryDirectory(prefix="asr-specdec-downloads-")  # removed with the app

    def transcribe(self, audio, main, mode, assistant, draft_tokens, dynamic, language, task, output_format,
                   progress=gr.Progress()):  # noqa: B008 (gradio finds its progress bar by this default)
        """(transcript, token highlights, telemetry rows, transcript file)."""
        with shown_to_user():
            options = options_from(main, mode, assistant, draft_tokens, dynamic, language, task)
            result = self.service.transcribe(audio, options, lambda done, what: progress(done, desc=what),
                                             timestamps=True if output_format in SUBTITLES else None)
            download = write_transcript(result, output_format, Path(self._downloads.name), Path(audio).stem)
            highlights = token_highlights(result, self.service.tokenizer(main))
            return result.text, highlights, telemetry_rows(result), str(download)

    def compare(self, audio, main, mode, assistant, draft_tokens, dynamic, language, task,
                progress=gr.Progress()):  # noqa: B008
        """(comparison rows, plain transcript, speculative transcript, speculative token highlights)."""
        with shown_to_user():
            options = options_from(main, mode, assistant, draft_tokens, dynamic, language, task)
            plain, speculative = self.service.compare(audio, options, lambda done, what: progress(done, desc=what))
            return (comparison_rows(plain, speculative), plain.text, speculative.text,
                    token_highlights(speculative, self.service.tokenizer(main)))
