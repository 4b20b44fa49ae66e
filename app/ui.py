"""The page: three tabs (file, microphone, compare), each with its own results, beside the settings.

The tabs come first in the page, so on a phone the audio input is on the first screen and the settings follow."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from asr_specdec.core.draft_length import DEFAULT_DRAFT_TOKENS

from .compute_guide import AUTO as AUTO_COMPUTE
from .compute_guide import compute_choices, compute_help
from .drafter_guide import guide_markdown, mode_choices, mode_help
from .handlers import Handlers
from .languages import AUTO, language_choices, language_info, task_choices
from .live_tab import WAITING, LiveHandlers
from .pairing import assistant_info
from .service import TranscriptionService
from .settings import RecipeChoices
from .views import HIGHLIGHT_COLORS, HIGHLIGHT_LEGEND, empty_comparison_html

INTRO = ("# asr-specdec\nWhisper transcription with exact speculative decoding: a cheap drafter proposes tokens and "
         "the main model verifies them in one pass, so the text is exactly the main model's, sooner.")


@dataclass
class Controls:
    main: gr.Dropdown
    mode: gr.Dropdown
    assistant: gr.Dropdown
    language: gr.Dropdown
    task: gr.Radio
    draft_tokens: gr.Slider
    dynamic: gr.Checkbox
    compute_type: gr.Dropdown
    word_timestamps: gr.Checkbox
    vad_filter: gr.Checkbox
    initial_prompt: gr.Textbox
    hotwords: gr.Textbox
    beam_size: gr.Slider
    repetition_penalty: gr.Number
    no_repeat_ngram_size: gr.Number
    speakers: gr.Dropdown

    @property
    def decoding(self) -> list:
        """In the order of the handlers' parameters."""
        return [self.main, self.mode, self.assistant, self.language, self.task, self.draft_tokens, self.dynamic,
                self.compute_type, self.word_timestamps, self.vad_filter, self.initial_prompt, self.hotwords,
                self.beam_size, self.repetition_penalty, self.no_repeat_ngram_size, self.speakers]


@dataclass
class ResultPanel:
    transcript: gr.Textbox
    summary: gr.HTML
    segments: gr.HTML
    downloads: gr.File
    highlights: gr.HighlightedText
    telemetry: gr.HTML

    @property
    def outputs(self) -> list:
        """In the order the transcribe handlers return them."""
        return [self.transcript, self.summary, self.segments, self.highlights, self.telemetry, self.downloads]


def build_app(service: TranscriptionService) -> gr.Blocks:
    handlers, live = Handlers(service), LiveHandlers(service)

    with gr.Blocks(title="asr-specdec", delete_cache=(3600, 3600), analytics_enabled=False) as app:
        gr.Markdown(INTRO, elem_id="intro")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=340):
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
                    with gr.Tab("Live"):
                        live_audio = gr.Audio(sources=["microphone"], streaming=True, type="numpy",
                                              label="Microphone, transcribed as you speak", elem_id="live-audio")
                        live_text = gr.HTML(WAITING, label="Live transcript (grey: may still change)",
                                            show_label=True, container=True, elem_id="live-text")
                        live_telemetry = gr.HTML(label="Live telemetry", show_label=True, container=True,
                                                 elem_id="live-telemetry")
                        live_session = gr.State(None)
                    with gr.Tab("Compare"):
                        compare_audio = gr.Audio(sources=["upload", "microphone"], type="filepath",
                                                 label="Audio for both decoders", elem_id="compare-audio")
                        compare_button = gr.Button("Compare plain vs speculative", variant="primary",
                                                   elem_id="compare")
                        compare_outputs = _comparison_panel()
            with gr.Column(scale=1, min_width=280, elem_id="settings"):
                controls = _controls(service)

        controls.main.change(handlers.main_changed, [controls.main, controls.mode, controls.language, controls.task],
                             [controls.language, controls.task, controls.assistant], api_visibility="private",
                             queue=False)
        controls.compute_type.change(handlers.compute_changed, [controls.compute_type], [controls.compute_type],
                                     api_visibility="private", queue=False)
        controls.mode.change(handlers.mode_changed, [controls.main, controls.mode], [controls.mode, controls.assistant],
                             api_visibility="private", queue=False)
        # one progress indicator per job, on the transcript, not one on every output
        file_button.click(handlers.transcribe, [file_audio, *controls.decoding], file_panel.outputs,
                          api_name="transcribe", show_progress_on=[file_panel.transcript])
        mic_button.click(handlers.transcribe_recording, [mic_audio, *controls.decoding], mic_panel.outputs,
                         api_name="transcribe_microphone", show_progress_on=[mic_panel.transcript])
        compare_button.click(handlers.compare, [compare_audio, *controls.decoding], compare_outputs,
                             api_name="compare", show_progress_on=[compare_outputs[1]])
        live_outputs = [live_session, live_text, live_telemetry]
        live_audio.start_recording(live.start, None, live_outputs, api_visibility="private", queue=False)
        # a queue slot of its own, so live chunks do not wait behind file jobs; one chunk at a time, since a
        # stream's resampler and the session's state take one chunk after another
        live_audio.stream(live.chunk, [live_session, live_audio, *controls.decoding], live_outputs,
                          stream_every=0.5, api_visibility="private", concurrency_id="live", concurrency_limit=1,
                          show_progress="hidden")
        live_audio.stop_recording(live.stop, [live_session], live_outputs, api_visibility="private",
                                  concurrency_id="live")
    return app


def _controls(service: TranscriptionService) -> Controls:
    if service.settings.default_mode is None:  # the page offers the mode the default main model's decoder chose
        service.load_defaults()
    settings = service.settings
    main_profile = service.profile(settings.default_main)
    assistants = service.assistants(settings.default_main, settings.default_mode)
    gr.Markdown("### Settings")
    main = gr.Dropdown(list(settings.models), value=settings.default_main, label="Main model",
                       info="the model whose text you get, whatever the drafter")
    mode = gr.Dropdown(mode_choices(settings.device), value=settings.default_mode, label="Drafter",
                       info=mode_help(settings.default_mode, settings.device), elem_id="drafter")
    offered = assistants or list(settings.models)  # hidden until a mode that needs an assistant is chosen
    assistant = gr.Dropdown(offered, label="Assistant model", visible=bool(assistants), elem_id="assistant",
                            value=settings.default_assistant if settings.default_assistant in offered else offered[0],
                            info=assistant_info(settings.default_main, settings.default_mode, assistants))
    language = gr.Dropdown(language_choices(main_profile.languages), label="Language", elem_id="language",
                           value=AUTO if main_profile.multilingual else "en",
                           info=language_info(settings.default_main, main_profile.languages))
    task = gr.Radio(task_choices(main_profile.multilingual), value="transcribe", label="Task")
    compute_type = gr.Dropdown(compute_choices(settings.device), value=AUTO_COMPUTE, label="Compute type",
                               info=compute_help(AUTO_COMPUTE, settings.device), elem_id="compute-type")
    word_timestamps = gr.Checkbox(False, label="Word timestamps (each word with its time in the segments)",
                                  elem_id="word-timestamps")
    vad_filter = gr.Checkbox(False, label="Skip silence (VAD): decode only where someone speaks", elem_id="vad")
    limits = settings.limits
    speakers = gr.Dropdown(["off", "estimate", *map(str, range(1, limits.diarize + 1))], value=RecipeChoices.speakers,
                           allow_custom_value=True, label="Speakers (who spoke when)", elem_id="speakers",
                           info="how many people speak, or estimate: each segment labelled and coloured by speaker")
    with gr.Accordion("Decoding options", open=False, elem_id="decoding-options"):
        draft_tokens = gr.Slider(1, limits.num_draft_tokens, value=DEFAULT_DRAFT_TOKENS, step=1,
                                 label="Draft tokens per round")
        dynamic = gr.Checkbox(False, label="Dynamic draft length (+2 on full acceptance, -1 otherwise)")
        initial_prompt = gr.Textbox("", label="Initial prompt", lines=2, elem_id="initial-prompt",
                                    info="text the transcript continues: spellings, names, punctuation style")
        hotwords = gr.Textbox("", label="Hotwords", elem_id="hotwords", info="words to listen for, in every window")
        beam_size = gr.Slider(0, limits.beam_size, value=0, step=1, label="Beam search: beams (0: greedy)",
                              elem_id="beam-size",
                              info="openai-whisper's and faster-whisper's default is 5; speculative beam search gives "
                                   "exactly plain beam search's text")
        # no minimum here: the library checks the range, and its message names these fields (Gradio's would not)
        repetition_penalty = gr.Number(RecipeChoices.repetition_penalty, label="Repetition penalty",
                                       elem_id="repetition-penalty",
                                       info="above 1 discourages tokens this window already wrote (1: off)")
        no_repeat_ngram_size = gr.Number(RecipeChoices.no_repeat_ngram_size, label="No repeat n-gram size", precision=0,
                                         elem_id="no-repeat-ngram-size",
                                         info="no run of this many tokens twice in a window (0: off)")
    with gr.Accordion("About the drafters", open=False, elem_id="drafter-guide"):
        gr.Markdown(guide_markdown(settings.device))
    gr.Markdown(f"Uploads up to {settings.max_upload_mb:g} MB and {settings.max_audio_seconds:g} s of audio.")
    return Controls(main, mode, assistant, language, task, draft_tokens, dynamic, compute_type, word_timestamps,
                    vad_filter, initial_prompt, hotwords, beam_size, repetition_penalty, no_repeat_ngram_size, speakers)


def _result_panel(prefix: str) -> ResultPanel:
    summary = gr.HTML(elem_id=f"{prefix}-summary")
    transcript = gr.Textbox(label="Transcript", lines=3, buttons=["copy"], elem_id=f"{prefix}-transcript")
    segments = gr.HTML(label="Segments", show_label=True, container=True, elem_id=f"{prefix}-segments")
    downloads = gr.File(label="Download (text, SRT and WebVTT subtitles, JSON)", file_count="multiple",
                        elem_id=f"{prefix}-download", elem_classes=["downloads"])
    highlights = _highlights(f"{prefix}-highlights")
    telemetry = gr.HTML(label="Telemetry", show_label=True, container=True, elem_id=f"{prefix}-telemetry")
    return ResultPanel(transcript, summary, segments, downloads, highlights, telemetry)


def _comparison_panel() -> list:
    """The compare handler's outputs, in its order."""
    summary = gr.HTML(elem_id="compare-summary")
    # drawn with empty values until the first comparison, so the progress bar on it has room
    table = gr.HTML(empty_comparison_html(), label="Plain greedy vs speculative", show_label=True, container=True,
                    elem_id="comparison")
    with gr.Row():
        plain_text = gr.Textbox(label="Plain transcript", lines=3, buttons=["copy"], min_width=240,
                                elem_id="plain-transcript")
        speculative_text = gr.Textbox(label="Speculative transcript", lines=3, buttons=["copy"], min_width=240,
                                      elem_id="speculative-transcript")
    highlights = _highlights("compare-highlights")
    downloads = gr.File(label="Download (speculative transcript; both results in .comparison.json)",
                        file_count="multiple", elem_id="compare-download", elem_classes=["downloads"])
    return [summary, table, plain_text, speculative_text, highlights, downloads]


def _highlights(elem_id: str) -> gr.HighlightedText:
    highlights = gr.HighlightedText(label="Tokens: accepted from the draft, or the main model's own",
                                    color_map=HIGHLIGHT_COLORS, show_legend=True, show_inline_category=False,
                                    elem_id=elem_id)
    gr.Markdown(HIGHLIGHT_LEGEND, elem_classes=["legend"])
    return highlights
