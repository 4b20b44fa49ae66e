"""Tiny random Whisper models built from a config, for fast exactness tests."""

from __future__ import annotations

import torch
from transformers import GenerationConfig, WhisperConfig, WhisperForConditionalGeneration

VOCAB = 120
EOS = 100  # every id from EOS up is "special", as in Whisper
START, NO_TIMESTAMPS = 101, 110


def tiny_whisper(seed: int, layers: int = 2, d_model: int = 64, vocab: int = VOCAB) -> WhisperForConditionalGeneration:
    torch.manual_seed(seed)
    config = WhisperConfig(
        vocab_size=vocab, d_model=d_model, encoder_layers=layers, decoder_layers=layers,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=2 * d_model,
        decoder_ffn_dim=2 * d_model, num_mel_bins=8, max_source_positions=16, max_target_positions=64,
        decoder_start_token_id=START, eos_token_id=EOS, pad_token_id=EOS, bos_token_id=EOS, init_std=0.3,
    )
    model = WhisperForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        decoder_start_token_id=START, eos_token_id=EOS, pad_token_id=EOS, no_timestamps_token_id=NO_TIMESTAMPS,
        suppress_tokens=[3, 7], begin_suppress_tokens=[EOS, 5], max_length=64,
    )
    return model


def encoder_output(model, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_features, encoder output) for random 'audio'."""
    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(1, 8, 32, generator=generator)
    with torch.inference_mode():
        return features, model.model.encoder(features).last_hidden_state


def drafter_factories(main, other) -> dict:
    """Every Whisper drafter on tiny models, as factories: `other` has the same vocabulary and unrelated weights
    (acceptance near zero), the main model drafting for itself always agrees."""
    from asr_specdec.core.prompt_lookup import PromptLookupDrafter
    from asr_specdec.whisper.drafters import AssistantDrafter, EarlyExitDrafter, QuantizedSelfDrafter

    return {
        "assistant-other": lambda: AssistantDrafter(other, main),
        "assistant-self": lambda: AssistantDrafter(main, main),
        "quantized-self": lambda: QuantizedSelfDrafter(main),
        "early-exit": lambda: EarlyExitDrafter(main, 1),
        "prompt-lookup": lambda: PromptLookupDrafter(),
    }


def large_v3_layout(seed: int, layers: int = 3, d_model: int = 64) -> WhisperForConditionalGeneration:
    """A tiny random Whisper laid out as large-v3: 128 mel bins (its features are 128 x 3000 for 30 s)."""
    torch.manual_seed(seed)
    config = WhisperConfig(
        vocab_size=VOCAB, d_model=d_model, encoder_layers=layers, decoder_layers=layers, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=2 * d_model, decoder_ffn_dim=2 * d_model, num_mel_bins=128,
        max_source_positions=16, max_target_positions=64, decoder_start_token_id=START, eos_token_id=EOS,
        pad_token_id=EOS, bos_token_id=EOS, init_std=0.3,
    )
    model = WhisperForConditionalGeneration(config).eval()
    model.generation_config = GenerationConfig(
        decoder_start_token_id=START, eos_token_id=EOS, pad_token_id=EOS, no_timestamps_token_id=NO_TIMESTAMPS,
        suppress_tokens=[3, 7], begin_suppress_tokens=[EOS, 5], max_length=64,
    )
    return model


def distil_assistant(main: WhisperForConditionalGeneration, seed: int, layers: int = 2):
    """A decoder-only assistant shaped as distil-whisper's (WhisperForCausalLM, `layers` decoder layers, reading
    the main model's encoder output), with random weights: it almost never agrees with the main model."""
    from transformers import WhisperForCausalLM

    torch.manual_seed(seed)
    config = WhisperConfig(**{**main.config.to_dict(), "decoder_layers": layers})
    assistant = WhisperForCausalLM(config).eval()
    return assistant


def features_for(model, seed: int) -> torch.Tensor:
    """Random 'audio' features [1, mel bins, frames] for `model`."""
    generator = torch.Generator().manual_seed(seed)
    frames = 2 * model.config.max_source_positions
    return torch.randn(1, model.config.num_mel_bins, frames, generator=generator)


class DraftedPipeline:
    """A window pipeline and the speculation (drafter, draft length) its decodes run under, and a limit on each
    row's new tokens: the tests' shorthand for `pipeline.decode(windows, speculation)`; anything else is the
    pipeline's."""

    def __init__(self, pipeline, drafter=None, draft_tokens: int = 4, max_new_tokens: int | None = None):
        from asr_specdec.core.draft_length import DraftLength
        from asr_specdec.whisper.runtime.pipeline import Speculation

        self.pipeline, self.max_new_tokens = pipeline, max_new_tokens
        self.speculation = Speculation(drafter, DraftLength(draft_tokens, schedule="fixed"))

    @property
    def drafter(self):
        return self.speculation.drafter

    def decode(self, windows, generator=None):
        from dataclasses import replace

        limited = [replace(window, max_new_tokens=window.max_new_tokens or self.max_new_tokens) for window in windows]
        return self.pipeline.decode(limited, self.speculation, generator)

    def __getattr__(self, name):
        return getattr(self.pipeline, name)
