"""A smaller Whisper with the same tokenizer as drafter.

Two shapes: an encoder-decoder Whisper, which runs its own encoder unless its encoder is the main one
(distil-Whisper keeps the teacher's encoder frozen, so the weights are equal and the main encoder output
is reused), and a decoder-only assistant (`WhisperForCausalLM`), which always reads the main encoder output.
"""

from __future__ import annotations

import torch
from torch import nn

from ...core.model_drafter import ModelDrafter
from ...errors import ModelError, OptionError
from ..runtime.decoder import DecoderTarget, WhisperDecoderRunner, decoder_parts, drafting_formats


def has_own_encoder(model: nn.Module) -> bool:
    return getattr(model.model, "encoder", None) is not None


def same_encoder(main: nn.Module, assistant: nn.Module) -> bool:
    """True when the assistant's encoder would compute exactly the main encoder's output."""
    if not has_own_encoder(assistant):
        return False
    if assistant.model.encoder is main.model.encoder:
        return True
    main_encoder, assistant_encoder = main.model.encoder, assistant.model.encoder
    main_params = dict(main_encoder.named_parameters())
    assistant_params = dict(assistant_encoder.named_parameters())
    if main_params.keys() != assistant_params.keys():
        return False
    return all(a.shape == main_params[name].shape and torch.equal(a, main_params[name].to(a.device, a.dtype))
               for name, a in assistant_params.items())


def check_same_vocabulary(main: nn.Module, assistant: nn.Module, mode: str) -> None:
    main_vocab = decoder_parts(main)[0].embed_tokens.weight.shape[0]
    assistant_vocab = decoder_parts(assistant)[0].embed_tokens.weight.shape[0]
    if main_vocab != assistant_vocab:
        raise OptionError("mode", f"mode '{mode}' needs the same tokenizer, but the main model has {main_vocab} "
                                  f"tokens and the assistant {assistant_vocab}: use {{mode=universal}} for a pair "
                                  f"with different tokenizers")
    check_same_device(main, assistant)


def check_same_device(main: nn.Module, assistant: nn.Module) -> None:
    main_device = next(main.parameters()).device
    assistant_device = next(assistant.parameters()).device
    if main_device != assistant_device:
        raise ModelError(f"the assistant is on {assistant_device} but the main model on {main_device}: "
                         "load both on the same device")


MODE = "assistant"


def build(context) -> AssistantDrafter:
    """A second model with the main model's tokenizer (a distilled or smaller Whisper), decoding in a drafter's
    formats: it shares no weights with the main model, and its drafts need no exactness."""
    model, _ = context.assistant()
    return AssistantDrafter(model, context.main, context.options.confidence_threshold, **drafting_formats(model))


class AssistantDrafter(ModelDrafter):
    name = "assistant"

    def __init__(self, assistant_model: nn.Module, main_model: nn.Module, confidence_threshold: float = 0.0,
                 weights: str | None = None, kv_dtype: torch.dtype | None = None,
                 cross_dtype: torch.dtype | None = None):
        super().__init__(confidence_threshold)
        check_same_vocabulary(main_model, assistant_model, self.name)
        main_width = decoder_parts(main_model)[0].embed_tokens.weight.shape[1]
        assistant_model.eval()
        self.shares_encoder = not has_own_encoder(assistant_model) or same_encoder(main_model, assistant_model)
        # an encoder the drafter never runs is not kept: loaded by name, it is freed (large-v3's: 0.6 GB in float16)
        self.encoder = None if self.shares_encoder else assistant_model.model.encoder
        cross_width = decoder_parts(assistant_model)[0].layers[0].encoder_attn.k_proj.in_features
        if not has_own_encoder(assistant_model) and cross_width != main_width:
            raise ModelError("the decoder-only assistant's cross-attention width does not match the main "
                             "model's encoder: it was not distilled from this main model")
        self.runner = WhisperDecoderRunner(assistant_model, weights=weights, kv_dtype=kv_dtype, cross_dtype=cross_dtype)

    def start(self, context) -> None:
        super().start(context)
        if self.shares_encoder:
            encoder_output = context.encoder_output
        else:
            features = context.input_features.to(self.runner.device, self.runner.dtype)
            expected_bins = self.encoder.conv1.in_channels
            if features.shape[1] != expected_bins:
                raise ModelError(f"the assistant expects {expected_bins} mel bins but the main model's features "
                                 f"have {features.shape[1]}")
            encoder_output = self.encoder(features).last_hidden_state
        max_positions = min(context.max_positions, self.runner.max_positions)
        cache = self.runner.new_cache(encoder_output.to(self.runner.dtype), max_positions=max_positions)
        self.target = DecoderTarget(self.runner, cache)
