"""Speculative decoding for causal language models, through the same engine, verifier and drafters as Whisper.

`SpeculativeLM` is the public API, mirroring `SpeculativeWhisper`: prompt in, text + tokens + stats out. The
model adapter is `target.CausalLMTarget`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
from torch import nn

from ..core.draft_length import DEFAULT_DRAFT_TOKENS, DraftLength
from ..core.drafter import DraftContext, Drafter
from ..core.engine import GenerationSettings, generate
from ..core.logits import LogitRules, Sampling
from ..core.modes import MODES
from ..core.prompt_lookup import PromptLookupDrafter
from ..core.stats import DecodeStats
from ..errors import ModelError, SpecdecError
from .target import CausalLMTarget, context_length, eos_token_ids, model_device, num_layers, vocab_size


@dataclass
class GenerationResult:
    text: str
    tokens: list[int]  # generated ids (ending with an end-of-sequence id when the model produced one)
    stats: DecodeStats
    prompt_tokens: list[int]
    mode: str
    main_model: str
    assistant_model: str | None = None


def _load(spec, tokenizer, device, dtype):
    """(model, tokenizer, name) from a spec string, a LoadedLM, a (model, tokenizer) pair or a bare model."""
    if isinstance(spec, str):
        from ..weights.text_models import load_causal_lm

        loaded = load_causal_lm(spec, device=device, dtype=dtype)
        return loaded.model, tokenizer or loaded.tokenizer, loaded.name
    if hasattr(spec, "model") and hasattr(spec, "tokenizer"):
        return spec.model, tokenizer or spec.tokenizer, getattr(spec, "name", type(spec.model).__name__)
    if isinstance(spec, tuple):
        spec, tokenizer = spec[0], tokenizer or spec[1]
    if not isinstance(spec, nn.Module):
        raise ModelError(f"a model is a name, a directory, a (model, tokenizer) pair or a model, not {type(spec)}")
    return spec, tokenizer, getattr(spec.config, "_name_or_path", "") or type(spec).__name__


def same_tokenizer(main_model, main_tokenizer, assistant_model, assistant_tokenizer) -> bool:
    if vocab_size(main_model) != vocab_size(assistant_model):
        return False
    if main_tokenizer is None or assistant_tokenizer is None or main_tokenizer is assistant_tokenizer:
        return True
    return main_tokenizer.get_vocab() == assistant_tokenizer.get_vocab()


class SpeculativeLM:
    """Generate text with a main causal LM, optionally verified against a drafter.

    Greedy output is exactly the main model's greedy output whatever the drafter; sampling output has exactly
    the main model's distribution. Accepts transformers' argument names (`assistant_model`, `tokenizer`,
    `assistant_tokenizer`, `num_assistant_tokens`, `prompt_lookup_num_tokens`, `max_matching_ngram_size`,
    `assistant_early_exit`) and the spelling `speculative_decoding=True, draft_model=..., num_draft_tokens=N`.
    `drafter` is a mode name (see core.modes.MODES) or a Drafter object; without one, the mode follows from the
    arguments given, as in transformers. As in transformers, a model drafter stops a draft where its own top
    probability falls below `assistant_confidence_threshold` (0.4; 0 drafts every token asked for).
    """

    def __init__(self, main="smollm2-135m", drafter: str | Drafter | None = None, *, mode: str | None = None,
                 assistant_model=None, draft_model=None, tokenizer=None, assistant_tokenizer=None,
                 prompt_lookup_num_tokens: int | None = None, max_matching_ngram_size: int | None = None,
                 assistant_early_exit: int | None = None, num_assistant_tokens: int | None = None,
                 num_draft_tokens: int | None = None, dynamic: bool = False,
                 assistant_confidence_threshold: float = 0.4, speculative_decoding: bool = True,
                 do_sample: bool = False, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                 seed: int | None = None, max_new_tokens: int = 128, eos_token_id: int | list[int] | None = None,
                 device: str = "cpu", dtype: torch.dtype | None = None):
        dtype = dtype or torch.float32
        self.model, self.tokenizer, self.main_name = _load(main, tokenizer, device, dtype)
        self.model.eval()
        self.layers = num_layers(self.model)
        self.max_positions = context_length(self.model)
        self.sampling = _checked(Sampling, do_sample, temperature, top_k, top_p)
        self.seed = seed
        self.max_new_tokens = _checked_max_new_tokens(max_new_tokens)
        if eos_token_id is not None:
            self.eos_ids = [eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id)
        else:
            self.eos_ids = eos_token_ids(self.model, self.tokenizer)
        tokens = next((n for n in (num_draft_tokens, num_assistant_tokens, prompt_lookup_num_tokens) if n is not None),
                      DEFAULT_DRAFT_TOKENS)
        self.draft_length = _checked(DraftLength, tokens, dynamic=dynamic)
        self.assistant_name = None

        assistant_model = assistant_model if assistant_model is not None else draft_model
        if isinstance(drafter, Drafter):
            self.mode, self.drafter = drafter.name, drafter
            return
        self.mode = self._resolve_mode(drafter or mode, speculative_decoding, assistant_model, prompt_lookup_num_tokens,
                                       assistant_early_exit)
        self.drafter = self._make_drafter(assistant_model, assistant_tokenizer, assistant_confidence_threshold,
                                          assistant_early_exit, max_matching_ngram_size, device, dtype,
                                          explicit=(drafter or mode) is not None)

    @staticmethod
    def _resolve_mode(mode, speculative_decoding, assistant_model, prompt_lookup, early_exit) -> str:
        if mode is not None:
            if mode not in MODES:
                raise SpecdecError(f"unknown mode '{mode}': choose one of {', '.join(MODES)}")
            return mode
        if not speculative_decoding:
            return "off"
        if assistant_model is not None:
            return "assistant"  # becomes universal below when the tokenizers differ
        if prompt_lookup:
            return "prompt-lookup"
        if early_exit is not None:
            return "early-exit"
        return "off"

    def _make_drafter(self, assistant_model, assistant_tokenizer, threshold, early_exit, ngram_size, device, dtype,
                      explicit: bool):
        if self.mode == "off":
            return None
        if self.mode == "prompt-lookup":
            return PromptLookupDrafter(max_ngram_size=ngram_size or 3)
        if self.mode == "early-exit":
            from .drafters.early_exit import TextEarlyExitDrafter

            return TextEarlyExitDrafter(self.model, max(1, self.layers // 4) if early_exit is None else early_exit,
                                        threshold)
        if self.mode == "quantized-self":
            from .drafters.quantized_self import TextQuantizedSelfDrafter

            return TextQuantizedSelfDrafter(self.model, threshold)
        if assistant_model is None:
            raise SpecdecError(f"mode '{self.mode}' needs an assistant model (--assistant / assistant_model=)")
        model, tokenizer, self.assistant_name = _load(assistant_model, assistant_tokenizer, device, dtype)
        if model_device(model) != model_device(self.model):
            raise ModelError(f"the assistant is on {model_device(model)} but the main model on "
                             f"{model_device(self.model)}: load both on the same device")
        if self.mode == "assistant" and not same_tokenizer(self.model, self.tokenizer, model, tokenizer):
            if explicit:
                raise ModelError(f"mode 'assistant' needs the main model's tokenizer, but {self.assistant_name} has "
                                 "another: use mode 'universal' for a pair with different tokenizers")
            if tokenizer is None:
                raise ModelError("the assistant's vocabulary differs from the main model's: pass "
                                 "assistant_tokenizer=... (and tokenizer=...) for universal assisted decoding")
            self.mode = "universal"
        if self.mode == "assistant":
            from .drafters.assistant import TextAssistantDrafter

            return TextAssistantDrafter(model, self.model, threshold)
        if tokenizer is None or self.tokenizer is None:
            raise ModelError("universal mode needs both tokenizers: pass tokenizer=... and assistant_tokenizer=...")
        from .drafters.universal import TextUniversalDrafter

        return TextUniversalDrafter(model, tokenizer, self.tokenizer, threshold)

    def encode(self, prompt: str | list[int], chat: bool = False) -> list[int]:
        """Prompt ids: a string encoded as transformers users do (with the tokenizer's special tokens, or the
        chat template with a generation prompt when `chat`), or ids as given."""
        if isinstance(prompt, str):
            if not prompt.strip():
                raise SpecdecError("the prompt is empty")
            if self.tokenizer is None:
                raise ModelError("a text prompt needs the main model's tokenizer: pass tokenizer=...")
            if chat:
                if not getattr(self.tokenizer, "chat_template", None):
                    raise SpecdecError(f"{self.main_name} has no chat template: drop --chat")
                ids = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                                         add_generation_prompt=True, tokenize=True)
                ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
            else:
                ids = self.tokenizer(prompt)["input_ids"]
        else:
            ids = [int(token) for token in prompt]
        if not ids:
            raise SpecdecError("the prompt is empty")
        if len(ids) >= self.max_positions:
            raise SpecdecError(f"the prompt has {len(ids)} tokens but {self.main_name} reads at most "
                               f"{self.max_positions}, generated tokens included: shorten it")
        return list(ids)

    def generate(self, prompt: str | list[int], max_new_tokens: int | None = None, *, chat: bool = False,
                 do_sample: bool | None = None, temperature: float | None = None, top_k: int | None = None,
                 top_p: float | None = None, seed: int | None = None) -> GenerationResult:
        """Continue `prompt` (a string, or token ids) by up to `max_new_tokens` tokens."""
        started = time.perf_counter()
        prompt_ids = self.encode(prompt, chat)
        sampling = self.sampling
        if any(value is not None for value in (do_sample, temperature, top_k, top_p)):
            sampling = _checked(Sampling, sampling.do_sample if do_sample is None else do_sample,
                                sampling.temperature if temperature is None else temperature,
                                sampling.top_k if top_k is None else top_k, sampling.top_p if top_p is None else top_p)
        generator = sampling.generator(seed if seed is not None else self.seed)
        eos, other_eos = (self.eos_ids[0], set(self.eos_ids[1:])) if self.eos_ids else (-1, set())
        settings = GenerationSettings(
            eos_token_id=eos, rules=LogitRules(),
            max_new_tokens=self.max_new_tokens if max_new_tokens is None else _checked_max_new_tokens(max_new_tokens),
            sampling=sampling, draft_length=self.draft_length,
            stop=(lambda sequence: bool(other_eos.intersection(sequence[len(prompt_ids):]))) if other_eos else None)
        with torch.inference_mode():
            target = CausalLMTarget(self.model, max_positions=self.max_positions)
            drafter_seconds = 0.0
            if self.drafter is not None:
                drafter_started = time.perf_counter()
                self.drafter.start(DraftContext(rules=settings.rules, sampling=sampling,
                                                max_positions=target.max_positions, eos_token_id=eos,
                                                generator=generator, main_cache=target.cache))
                drafter_seconds = time.perf_counter() - drafter_started
            tokens, stats = generate(target, prompt_ids, settings, self.drafter, generator)
        stats.draft_seconds += drafter_seconds
        if other_eos:
            tokens, stats = _cut_at_end(tokens, stats, other_eos)
        stats.total_seconds = time.perf_counter() - started
        text = self.tokenizer.decode(tokens, skip_special_tokens=True) if self.tokenizer is not None else ""
        return GenerationResult(text=text, tokens=tokens, stats=stats, prompt_tokens=prompt_ids, mode=self.mode,
                                main_model=self.main_name, assistant_model=self.assistant_name)


def _checked(settings_class, *args, **kwargs):
    """Settings whose out-of-range values are the user's to fix: a SpecdecError, shown as one line."""
    try:
        return settings_class(*args, **kwargs)
    except ValueError as error:
        raise SpecdecError(str(error)) from None


def _checked_max_new_tokens(max_new_tokens: int) -> int:
    if max_new_tokens < 1:
        raise SpecdecError(f"max_new_tokens must be at least 1, not {max_new_tokens}")
    return max_new_tokens


def _cut_at_end(tokens: list[int], stats: DecodeStats, end_ids: set[int]) -> tuple[list[int], DecodeStats]:
    """Truncate after the first of the extra end-of-sequence ids (the engine stops on one id; a round may
    have accepted draft tokens past another)."""
    for index, token in enumerate(tokens):
        if token in end_ids:
            tokens = tokens[: index + 1]
            stats.token_from_draft = stats.token_from_draft[: index + 1]
            stats.new_tokens = len(tokens)
            break
    return tokens, stats
