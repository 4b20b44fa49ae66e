"""SpeculativeWhisper's keyword arguments mapped into its two options objects, once, at its edge: its own names,
transformers' (`assistant_model`, `num_assistant_tokens`, `prompt_lookup_num_tokens`, `assistant_early_exit`,
`assistant_tokenizer`, `return_timestamps`, `condition_on_prev_tokens`, `num_assistant_tokens_schedule`), the
aliases `draft_model` / `num_draft_tokens`, and openai's / faster-whisper's recipe names (`temperature` lists,
`temperature_fallback`, `log_prob_threshold`, `vad_parameters`)."""

from __future__ import annotations

from ..core.draft_length import DEFAULT_DRAFT_TOKENS
from ..core.drafter import Drafter
from ..core.logits import Sampling
from .model_options import DEFAULT_SCHEDULE, ModelOptions
from .options import TranscribeOptions, temperature_ladder, vad_options


def constructor_options(main="base", drafter: str | Drafter | None = None, *, mode: str | None = None,
                        assistant_model=None, draft_model=None, assistant_tokenizer=None, processor=None,
                        num_assistant_tokens: int | None = None, num_draft_tokens: int | None = None,
                        dynamic: bool = False, assistant_confidence_threshold: float = 0.0,
                        prompt_lookup_num_tokens: int | None = None, assistant_early_exit: int | None = None,
                        do_sample: bool = False, temperature=None, top_k: int = 0, top_p: float = 1.0,
                        seed: int | None = None, language: str | None = None, task: str = "transcribe",
                        device: str | None = None, dtype=None, max_new_tokens: int | None = None,
                        timestamps: bool | None = None, return_timestamps: bool | None = None,
                        long_form: str = "sequential", condition_on_previous_text: bool | None = None,
                        condition_on_prev_tokens: bool | None = None, compute_type=None,
                        draft_schedule: str | None = None, num_assistant_tokens_schedule: str | None = None,
                        **recipe_options) -> tuple[ModelOptions, TranscribeOptions]:
    """(what the model is, how to transcribe) from SpeculativeWhisper's constructor arguments. `temperature` means
    what it means in a call (openai's: 0 decodes greedily, above 0 samples at it, a list is the fallback ladder),
    except beside `do_sample=True`, transformers' sampling, where it is that sampling's temperature (default 1)."""
    assistant = assistant_model if assistant_model is not None else draft_model
    mode = drafter if isinstance(drafter, str) else mode
    if mode is None and assistant is None:  # transformers' arguments name their drafter
        mode = "prompt-lookup" if prompt_lookup_num_tokens else "early-exit" if assistant_early_exit else None
    tokens = next((value for value in (num_draft_tokens, num_assistant_tokens) if value is not None),
                  DEFAULT_DRAFT_TOKENS)
    if mode == "prompt-lookup" and prompt_lookup_num_tokens:
        tokens = prompt_lookup_num_tokens
    if compute_type is None and dtype is not None:
        compute_type = str(dtype).removeprefix("torch.")  # its older spelling: a torch dtype for both halves
    model = ModelOptions(
        main=main, processor=processor, mode=mode, drafter=drafter if isinstance(drafter, Drafter) else None,
        assistant=assistant, assistant_tokenizer=assistant_tokenizer, num_draft_tokens=tokens,
        draft_schedule="heuristic" if dynamic else draft_schedule or num_assistant_tokens_schedule or DEFAULT_SCHEDULE,
        confidence_threshold=assistant_confidence_threshold, early_exit_layer=assistant_early_exit, device=device,
        compute_type=compute_type)
    options = TranscribeOptions(
        language=language, task=task,
        sampling=Sampling(do_sample, temperature if do_sample and _is_number(temperature) else Sampling.temperature,
                          top_k, top_p),
        seed=seed, timestamps=_first_given(timestamps, return_timestamps), long_form=long_form,
        condition_on_previous_text=bool(_first_given(condition_on_previous_text, condition_on_prev_tokens)),
        max_new_tokens=max_new_tokens)
    if do_sample and _is_number(temperature):
        temperature = None  # it was the sampling's
    return model, options.with_overrides(**recipe_arguments({"temperature": temperature, **recipe_options}))


def call_options(options: TranscribeOptions, *, language: str | None = None, task: str | None = None,
                 timestamps: bool | None = None, return_timestamps: bool | None = None, long_form: str | None = None,
                 condition_on_previous_text: bool | None = None, **recipe_options) -> TranscribeOptions:
    """A transcribe call's options: the transcriber's, with what the call gives (None keeps the transcriber's). A
    single `temperature` is openai's, as in the constructor: 0 decodes greedily (the configured ladder kept), above 0
    samples at it."""
    given = {"language": language, "task": task, "timestamps": _first_given(timestamps, return_timestamps),
             "long_form": long_form, "condition_on_previous_text": condition_on_previous_text}
    overrides = {name: value for name, value in given.items() if value is not None}
    return options.with_overrides(**overrides, **recipe_arguments(recipe_options))


def recipe_arguments(options: dict) -> dict:
    """Recipe options from openai/faster-whisper argument names: `temperature` (openai's: one number the ladder's
    first temperature, a list the ladder) and `temperature_fallback` make the fallback ladder (options.py
    temperature_ladder), `log_prob_threshold` is `logprob_threshold`, `vad_parameters` are `vad_options`."""
    options = dict(options)
    ladder = temperature_ladder(options.pop("temperature", None), options.pop("temperature_fallback", None))
    if ladder is not None:
        options["temperatures"] = ladder
    if "log_prob_threshold" in options:
        options["logprob_threshold"] = options.pop("log_prob_threshold")
    if "vad_parameters" in options:
        options["vad_options"] = options.pop("vad_parameters")
    if "vad_options" in options:
        options["vad_options"] = vad_options(options["vad_options"])
    return options


def _is_number(value) -> bool:
    return value is not None and not isinstance(value, (list, tuple))


def _first_given(*values):
    return next((value for value in values if value is not None), None)
