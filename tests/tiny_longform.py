"""Tiny random Whisper models with timestamp tokens, and a window decoder for longform.transcribe_sequential.

The encoder sees 16 positions, so a window is 32 feature frames and needs 17 timestamps (<|0.00|> ..
<|0.32|>): ids 111..127 after <|notimestamps|> (110). The end-of-text row of a fresh model is all zeros
(it is the padding id); a random row makes windows end in every way Whisper's can: at end-of-text after a
single timestamp, after a pair or after text, or at the length limit. As in Whisper, the special tokens
between end-of-text and <|notimestamps|> are suppressed.
"""

from __future__ import annotations

import torch

from asr_specdec.core.draft_length import DraftLength
from asr_specdec.core.drafter import DraftContext
from asr_specdec.core.engine import GenerationSettings, generate
from asr_specdec.core.logits import Sampling
from asr_specdec.whisper.longform.sequential import Frames
from asr_specdec.whisper.runtime.decoder import DecoderTarget, WhisperDecoderRunner
from asr_specdec.whisper.runtime.timestamps import TimestampRules

from .tiny_whisper import EOS, NO_TIMESTAMPS, START, tiny_whisper

START_OF_PREV = 108
TIMESTAMP_BEGIN = NO_TIMESTAMPS + 1
VOCAB = TIMESTAMP_BEGIN + 17
MAX_INITIAL_TIMESTAMP_INDEX = 4
SUPPRESS, BEGIN_SUPPRESS = (3, 7, *range(EOS + 1, NO_TIMESTAMPS)), (EOS, 5)
FRAMES = Frames(window=32, per_timestamp=2, seconds=0.01)


def timestamp_whisper(seed: int, layers: int = 2, end_of_text_scale: float = 0.3):
    model = tiny_whisper(seed, layers=layers, vocab=VOCAB)
    with torch.no_grad():
        generator = torch.Generator().manual_seed(1000 + seed)
        width = model.proj_out.weight.shape[1]
        model.proj_out.weight[EOS] = torch.randn(width, generator=generator) * end_of_text_scale
    config = model.generation_config
    config.suppress_tokens, config.begin_suppress_tokens = list(SUPPRESS), list(BEGIN_SUPPRESS)
    config.max_initial_timestamp_index = MAX_INITIAL_TIMESTAMP_INDEX
    config.prev_sot_token_id = START_OF_PREV
    config.is_multilingual = False
    return model


def long_features(seed: int, frames: int = 100) -> torch.Tensor:
    return torch.randn(1, 8, frames, generator=torch.Generator().manual_seed(seed))


def prompt_for(previous: list[int] | None) -> list[int]:
    cut = 64 // 2 - 1  # as transformers: max_target_positions // 2 - 1 previous tokens
    return ([START_OF_PREV, *previous[-cut:]] if previous else []) + [START]


def rules_for(prompt: list[int]) -> TimestampRules:
    return TimestampRules(SUPPRESS, BEGIN_SUPPRESS, begin_index=len(prompt), timestamp_begin=TIMESTAMP_BEGIN,
                          no_timestamps=NO_TIMESTAMPS, end_of_text=EOS,
                          max_initial_timestamp_index=MAX_INITIAL_TIMESTAMP_INDEX)


def window_decoder(model, drafter_factory=None, draft_tokens: int = 4, dynamic: bool = False,
                   stats: list | None = None, beam=None):
    """decode(window features, previous tokens) -> generated tokens, by the engine, plain or speculative; with beam
    search when `beam` (a BeamSearch) is given."""
    runner = WhisperDecoderRunner(model)
    drafter = drafter_factory() if drafter_factory else None

    def decode(window: torch.Tensor, previous: list[int] | None) -> list[int]:
        with torch.inference_mode():
            encoded = model.model.encoder(window).last_hidden_state
            cross = runner.cross_attention_states(encoded)
            cache = runner.new_cache(encoded, cross_states=cross)
            prompt = prompt_for(previous)
            settings = GenerationSettings(eos_token_id=EOS, max_new_tokens=64, rules=rules_for(prompt),
                                          draft_length=DraftLength(draft_tokens, dynamic=dynamic), beam=beam)
            if drafter is not None:
                drafter.start(DraftContext(rules=settings.rules, sampling=Sampling(), max_positions=cache.max_positions,
                                           eos_token_id=EOS, encoder_output=encoded, input_features=window,
                                           main_cache=cache, main_cross_states=cross))
            tokens, window_stats = generate(DecoderTarget(runner, cache), prompt, settings, drafter)
        if stats is not None:
            stats.append(window_stats)
        return tokens

    return decode
