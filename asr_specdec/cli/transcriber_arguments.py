"""The model and transcription arguments of the command lines (transcribe, serve) mapped into the Whisper
adapter's two options objects at their edge: ModelOptions (what the model is) and TranscribeOptions (how to
transcribe). Not a command itself: both commands import it, neither imports the other."""

from __future__ import annotations

from ..core.modes import ASSISTANT_MODES, check_mode_on
from .recipe_arguments import recipe_options

DEFAULTS_HELP = (
    "Defaults: with a CUDA GPU and the model hub reachable, main openai/whisper-large-v3 verified against "
    "distil-whisper/distil-large-v3 (mode assistant); otherwise (this offline CPU setup) the offline pack "
    "'base' with the quantized-self drafter, the fastest drafter measured on CPU (see README), except with an "
    "int8 main decoder, whose own int8 copy drafts no cheaper (mode off). "
    "--main/--assistant/--mode override. Model specs: an offline pack name (tiny.en, base), a CTranslate2 "
    "(faster-whisper) directory, a transformers directory or a model-hub id."
)


def add_model_arguments(parser, serving: bool = False) -> None:
    """The model and decoding flags transcribe and serve share (`serving`: a server's words, where a request may
    choose), their defaults read from ModelOptions, TranscribeOptions and Sampling."""
    from ..core.draft_length import SCHEDULES
    from ..core.logits import Sampling
    from ..core.modes import MODES
    from ..whisper.model_options import ModelOptions
    from ..whisper.options import LONG_FORM_MODES, TranscribeOptions

    model, options, sampling = ModelOptions(), TranscribeOptions(), Sampling()
    parser.add_argument("--main", help="main model (see below)")
    parser.add_argument("--assistant", help="assistant model for modes assistant/universal")
    parser.add_argument("--mode", choices=MODES, help="drafting mode (default: see below)" + (
        "; a request may ask for another with the form field `mode`" if serving else ""))
    parser.add_argument("--num-draft-tokens", type=int, default=None,
                        help=f"tokens drafted in the first round, every round with --draft-schedule fixed (default "
                             f"{model.num_draft_tokens})")
    parser.add_argument("--draft-schedule", choices=SCHEDULES, default=model.draft_schedule,
                        help="draft length per round: adaptive (measured acceptance and costs; stops drafting when "
                             "it does not pay), fixed, or heuristic (+2 on full acceptance, -1 otherwise); default "
                             "%(default)s")
    parser.add_argument("--dynamic", action="store_true", help="same as --draft-schedule heuristic")
    parser.add_argument("--confidence-threshold", type=float, default=model.confidence_threshold,
                        help="stop a draft when the drafter's top probability falls below this (default %(default)s: "
                             "never)")
    parser.add_argument("--early-exit-layer", type=int, default=model.early_exit_layer,
                        help="decoder layers the early-exit drafter uses (default: half of them)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads, as faster-whisper's cpu_threads (default: torch's, one per core; fewer "
                             "when the CPUs this process may use or its cgroup quota are fewer, and while another "
                             "process takes them: docs/compute.md, Sharing a CPU)")
    sampled = "for requests with temperature > 0" if serving else "with --do-sample"
    parser.add_argument("--top-k", type=int, default=sampling.top_k,
                        help=f"{sampled}: sample among the k likeliest (default %(default)s: all)")
    parser.add_argument("--top-p", type=float, default=sampling.top_p,
                        help=f"{sampled}: sample among the likeliest tokens holding this probability mass (default "
                             f"%(default)s: all)")
    parser.add_argument("--seed", type=int, default=options.seed,
                        help="random seed of sampling (default: a fresh one)")
    parser.add_argument("--language", default=options.language,
                        help="spoken language (e.g. en)" + (" of requests that give none" if serving else "")
                             + "; detected when omitted")
    parser.add_argument("--long-form", choices=LONG_FORM_MODES, default=options.long_form,
                        help="audio over 30 s: 'sequential' (Whisper's own: each 30-s window starts where the last "
                             "complete segment ended) or 'chunked' (independent windows cut at quiet points); "
                             "default %(default)s")
    parser.add_argument("--condition-on-previous-text", action="store_true",
                        default=options.condition_on_previous_text,
                        help="prompt each window with the text before it (<|startofprev|>), as openai's default")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1, ... (default: cuda if available)")
    from .commands import add_compute_type_arguments

    add_compute_type_arguments(parser)


def add_sampling_arguments(parser) -> None:
    """transformers' sampling: every token drawn at one fixed temperature (openai's --temperature is the recipe's)."""
    from ..core.logits import Sampling

    parser.add_argument("--do-sample", action="store_true", help="sample every token instead of greedy decoding")
    parser.add_argument("--sampling-temperature", type=float, default=None, metavar="T",
                        help=f"with --do-sample: the temperature every token is sampled at, > 0 (default "
                             f"{Sampling.temperature})")


def choose_models(args) -> tuple[str, str | None, str | None, str]:
    """(main, assistant, mode, why these models) from the arguments and what this machine offers; mode None when
    not given: the transcriber decides it from the loaded model (core.modes.default_drafter)."""
    from ..weights.whisper_models import default_models

    main, assistant, reason = args.main, args.assistant, "given on the command line"
    if main is None:
        main, default_assistant, reason = default_models()
        assistant = assistant or default_assistant
    if args.mode is not None:
        refused = check_mode_on(args.mode, args.device)
        if refused:
            from ..errors import SpecdecError

            raise SpecdecError(refused)
    return main, assistant, args.mode, reason


def model_options(args, main, assistant, mode: str | None):
    """ModelOptions from the command line (`device` already resolved from "auto"; `mode` None: the project's
    default, decided with the model loaded)."""
    from ..whisper.model_options import DEFAULT_SCHEDULE, ModelOptions

    return ModelOptions(
        main=main, mode=mode, assistant=assistant if mode is None or mode in ASSISTANT_MODES else None,
        num_draft_tokens=ModelOptions.num_draft_tokens if args.num_draft_tokens is None else args.num_draft_tokens,
        draft_schedule="heuristic" if args.dynamic else args.draft_schedule or DEFAULT_SCHEDULE,
        confidence_threshold=args.confidence_threshold, early_exit_layer=args.early_exit_layer, device=args.device,
        compute_type=args.compute_type or (None if args.dtype == "auto" else args.dtype))


def transcribe_options(args):
    """TranscribeOptions from the command line: subtitles decode with timestamps unless told otherwise."""
    from ..core.logits import Sampling
    from ..errors import OptionError
    from ..whisper.arguments import recipe_arguments
    from ..whisper.options import TranscribeOptions

    timestamps = args.timestamps if args.timestamps is not None else (args.format in ("srt", "vtt") or None)
    temperature = getattr(args, "sampling_temperature", None)
    if temperature is not None and not args.do_sample:  # greedy decoding would ignore it
        raise OptionError("sampling_temperature", "{sampling_temperature} goes with {do_sample} (openai's "
                                                  "temperature, the first of the fallback ladder, is {temperature})")
    try:
        sampling = Sampling(args.do_sample, Sampling.temperature if temperature is None else temperature, args.top_k,
                            args.top_p)
    except OptionError as error:  # Sampling's `temperature` is this command line's --sampling-temperature
        if error.option != "temperature":
            raise
        raise OptionError("sampling_temperature",
                          error.template.replace("{temperature}", "{sampling_temperature}")) from None
    options = TranscribeOptions(
        language=args.language, task=args.task, sampling=sampling,
        seed=args.seed, timestamps=timestamps, long_form=args.long_form,
        condition_on_previous_text=args.condition_on_previous_text)
    return options.with_overrides(**recipe_arguments(recipe_options(args)))


def build_transcriber(args):
    """(the transcriber the arguments ask for, why these models and this mode)."""
    import torch

    from ..errors import SpecdecError
    from ..whisper.transcriber import SpeculativeWhisper

    if args.threads is not None:
        if args.threads < 1:
            raise SpecdecError(f"--threads must be at least 1, not {args.threads}")
        torch.set_num_threads(args.threads)  # process-wide: the kernels' budget too (native/threads.py)
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    main, assistant, mode, reason = choose_models(args)
    transcriber = SpeculativeWhisper.from_options(model_options(args, main, assistant, mode), transcribe_options(args))
    return transcriber, f"{reason}; mode: {transcriber.mode_reason}"


def plain_sibling(transcriber):
    """The same transcriber decoding plainly (mode off), on the same loaded weights and pipeline: --compare's
    reference (whisper/comparison.py times each of its runs with an encoding of its own, none kept across)."""
    from dataclasses import replace

    from ..whisper.transcriber import SpeculativeWhisper

    plain = replace(transcriber.model_options, main=transcriber.loaded(), processor=None, mode="off", drafter=None)
    return SpeculativeWhisper.from_options(plain, transcriber.options)
