"""The model and transcription arguments of the command lines (transcribe, serve) mapped into the Whisper
adapter's two options objects at their edge: ModelOptions (what the model is) and TranscribeOptions (how to
transcribe). Not a command itself: both commands import it, neither imports the other."""

from __future__ import annotations

from .core.modes import ASSISTANT_MODES, check_mode_on, default_mode
from .recipe_arguments import recipe_options

LONG_FORM_MODES = ("sequential", "chunked")  # whisper.options.LONG_FORM_MODES, here without importing torch
DEFAULTS_HELP = (
    "Defaults: with a CUDA GPU and the model hub reachable, main openai/whisper-large-v3 verified against "
    "distil-whisper/distil-large-v3 (mode assistant); otherwise (this offline CPU setup) the offline pack "
    "'base' with the quantized-self drafter, the fastest drafter measured on CPU (see README). "
    "--main/--assistant/--mode override. Model specs: an offline pack name (tiny.en, base), a CTranslate2 "
    "(faster-whisper) directory, a transformers directory or a model-hub id."
)


def choose_models(args) -> tuple[str, str | None, str, str]:
    """(main, assistant, mode, why) from the arguments and what this machine offers."""
    from .weights.whisper_models import default_models

    main, assistant, reason = args.main, args.assistant, "given on the command line"
    if main is None:
        main, default_assistant, reason = default_models()
        assistant = assistant or default_assistant
    if args.mode is not None:
        refused = check_mode_on(args.mode, args.device)
        if refused:
            from .errors import SpecdecError

            raise SpecdecError(refused)
        return main, assistant, args.mode, reason
    mode = default_mode(args.device, bool(assistant))
    if mode == "off":
        reason = f"{reason}; mode off: no assistant given, and quantized-self runs on the CPU only"
    return main, assistant, mode, reason


def model_options(args, main, assistant, mode: str):
    """ModelOptions from the command line (`device` already resolved from "auto")."""
    from .whisper.model_options import DEFAULT_SCHEDULE, ModelOptions

    return ModelOptions(
        main=main, mode=mode, assistant=assistant if mode in ASSISTANT_MODES else None,
        num_draft_tokens=ModelOptions.num_draft_tokens if args.num_draft_tokens is None else args.num_draft_tokens,
        draft_schedule="heuristic" if args.dynamic else args.draft_schedule or DEFAULT_SCHEDULE,
        confidence_threshold=args.confidence_threshold, early_exit_layer=args.early_exit_layer, device=args.device,
        compute_type=args.compute_type or (None if args.dtype == "auto" else args.dtype))


def transcribe_options(args):
    """TranscribeOptions from the command line: subtitles decode with timestamps unless told otherwise."""
    from .core.logits import Sampling
    from .errors import OptionError
    from .whisper.arguments import recipe_arguments
    from .whisper.options import TranscribeOptions

    timestamps = args.timestamps if args.timestamps is not None else (args.format in ("srt", "vtt") or None)
    temperature = getattr(args, "temperature", None)
    if temperature is not None and temperature > 0 and not args.do_sample:  # greedy decoding would ignore it
        raise OptionError("temperature", "{temperature} above 0 samples: add {do_sample} (greedy decoding, the "
                                         "default, has no temperature)")
    options = TranscribeOptions(
        language=args.language, task=args.task,
        sampling=Sampling(args.do_sample, Sampling.temperature if temperature is None else temperature, args.top_k,
                          args.top_p),
        seed=args.seed, timestamps=timestamps, long_form=args.long_form,
        condition_on_previous_text=args.condition_on_previous_text)
    return options.with_overrides(**recipe_arguments(None, recipe_options(args)))


def build_transcriber(args):
    """(the transcriber the arguments ask for, why these models)."""
    import torch

    from .whisper.transcriber import SpeculativeWhisper

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    main, assistant, mode, reason = choose_models(args)
    return SpeculativeWhisper.from_options(model_options(args, main, assistant, mode), transcribe_options(args)), reason


def plain_sibling(transcriber):
    """The same transcriber decoding plainly (mode off), on the same loaded weights: --compare's reference."""
    from dataclasses import replace

    from .whisper.transcriber import SpeculativeWhisper

    plain = replace(transcriber.model_options, main=transcriber.loaded(), processor=None, mode="off", drafter=None)
    return SpeculativeWhisper.from_options(plain, transcriber.options)
