"""The page: settings beside three tabs (file, microphone, compare), each with its own results."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from asr_specdec.core.draft_length import DEFAULT_DRAFT_TOKENS
from asr_specdec.core.modes import ASSISTANT_MODES, MODES

from .handlers import Handlers
from .service import TranscriptionService
from .settings import AppSettings
from .views import COMPARISON_HEADERS, HIGHLIGHT_COLORS, TELEMETRY_HEADERS

INTRO = ("# asr-specdec\nWhisper transcription with exact speculative decoding: a cheap drafter proposes tokens, "
         "the main model verifies them in one pass, and the text is exactly what the main model alone would write.")


@dataclass
class Controls:
    main: gr.Dropdown
    mode: gr.Dropdown
    assistant: gr.Dropdown
    draft_tokens: gr.Slider
    dynamic: gr.Checkbox
    language: gr.Dropdown
    task: gr.Radio
    output_format: gr.Radio

    @property
    def decoding(self) -> list:
        return [self.main, self.mode, self.assistant, self.draft_tokens, self.dynamic, self.language, self.task]


@dataclass
class ResultPanel:
    transcript: gr.Textbox
    highlights: gr.HighlightedText
    telemetry: gr.Dataframe
    download: gr.File

    @property
    def outputs(self) -> list:
        return [self.transcript, self.highlights, self.telemetry, self.download]


def build_app(service: TranscriptionService) -> gr.Blocks:
    settings = service.settings
    handlers = Handlers(service)

    with gr.Blocks(title="asr-specdec", delete_cache=(3600, 3600), analytics_enabled=False) as app:
        gr.Markdown(INTRO)
        with gr.Row():
            with gr.Column(scale=1, min_width=260):
                controls = _controls(settings)
            with gr.Column(scale=3):
                with gr.Tabs():
                    with gr.Tab("File"):
                        file_audio = gr.Audio(sources=["upload"], type="filepath", label="Audio file",
                                              elem_id="file-audio")
                        file_button = gr.Button("Transcribe", variant="primary", elem_id="transcribe-file")
                        file_panel = _result_panel("file")
                    with gr.Tab("Microphone"):
                        mic_audio = gr.Audio(sources=["microphone"], type="filepath", label="Recording",
                                             elem_id="mic-audio")
                        mic_button = gr.Button("Transcribe recording", variant="primary", elem_id="transcribe-mic")
                        mic_panel = _result_panel("mic")
                    with gr.Tab("Compare"):
                        compare_audio = gr.Audio(sources=["upload", "microphone"], type="filepath",
                                                 label="Audio for both decoders", elem_id="compare-audio")
                        compare_button = gr.Button("Compare plain vs speculative", variant="primary",
                                                   elem_id="compare")
                        comparison = gr.Dataframe(headers=COMPARISON_HEADERS, interactive=False,
                                                  label="Plain greedy vs speculative", elem_id="comparison")
                        with gr.Row():
                            plain_text = gr.Textbox(label="Plain transcript", lines=3, elem_id="plain-transcript")
                            speculative_text = gr.Textbox(label="Speculative transcript", lines=3,
                                                          elem_id="speculative-transcript")
                        compare_highlights = _highlights("compare-highlights")

        controls.mode.change(lambda mode: gr.update(visible=mode in ASSISTANT_MODES), controls.mode,
                             controls.assistant, api_visibility="private", queue=False)
        transcribe_inputs = controls.decoding + [controls.output_format]
        file_button.click(handlers.transcribe, [file_audio, *transcribe_inputs], file_panel.outputs,
                          api_name="transcribe")
        mic_button.click(handlers.transcribe, [mic_audio, *transcribe_inputs], mic_panel.outputs,
                         api_name="transcribe_microphone")
        compare_button.click(handlers.compare, [compare_audio, *controls.decoding],
                             [comparison, plain_text, speculative_text, compare_highlights], api_name="compare")
    return app


def _controls(settings: AppSettings) -> Controls:
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    gr.Markdown("### Settings")
    main = gr.Dropdown(list(settings.models), value=settings.default_main, label="Main model")
    mode = gr.Dropdown(list(MODES), value=settings.default_mode, label="Drafter",
                       info="off = plain greedy decoding")
    assistant = gr.Dropdown(list(settings.models), value=settings.default_assistant, label="Assistant model",
                            visible=settings.default_mode in ASSISTANT_MODES,
                            info="assistant mode needs the main model's vocabulary; universal takes any")
    draft_tokens = gr.Slider(1, 16, value=DEFAULT_DRAFT_TOKENS, step=1, label="Draft tokens per round")
    dynamic = gr.Checkbox(False, label="Dynamic draft length (+2 on full accept, -1 otherwise)")
    language = gr.Dropdown(["auto", *sorted(LANGUAGES)], value="auto", label="Language",
                           info="auto: detected (English-only models ignore it)")
    task = gr.Radio(["transcribe", "translate"], value="transcribe", label="Task")
    output_format = gr.Radio(["text", "srt", "vtt"], value="text", label="Download format")
    gr.Markdown(f"Uploads up to {settings.max_upload_mb:g} MB and {settings.max_seconds:g} s of audio.")
    return Controls(main, mode, assistant, draft_tokens, dynamic, language, task, output_format)


def _result_panel(prefix: str) -> ResultPanel:
    transcript = gr.Textbox(label="Transcript", lines=3, elem_id=f"{prefix}-transcript")
    highlights = _highlights(f"{prefix}-highlights")
    telemetry = gr.Dataframe(headers=TELEMETRY_HEADERS, interactive=False, label="Telemetry",
                             elem_id=f"{prefix}-telemetry")
    download = gr.File(label="Download transcript", elem_id=f"{prefix}-download")
    return ResultPanel(transcript, highlights, telemetry, download)


def _highlights(elem_id: str) -> gr.HighlightedText:
    return gr.HighlightedText(label="Tokens: accepted from the draft vs supplied by the main model",
                              color_map=HIGHLIGHT_COLORS, show_legend=True, show_inline_category=False,
                              elem_id=elem_id)
