"""What openai's transcribe judges a window by, read after decoding from one extra main-model pass.

The engine's greedy loop never computes full logits (the certified argmax picks tokens without them), so the
log-probabilities of the chosen tokens and the no-speech probability come from the vocabulary projection of the
final hidden states of the window's final sequence: those decoding kept (on the native kernels a token's numbers
do not depend on the rest of its pass, so they are a fresh pass's bits), else one more decoder pass.
Drafter-independent by construction, and the same numbers for plain and speculative decoding of the same tokens.

- `avg_logprob`: the log-probabilities of the generated tokens (end-of-text included) under the main model
  with the decoding rules applied, at temperature 1, summed and divided by the number of text tokens + 1, as
  openai's decoder accumulates them.
- `no_speech_prob`: the probability of <|nospeech|> right after <|startoftranscript|>, from the raw logits.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...core.logits import LogitRules
from ..runtime.decoder import WhisperDecoderRunner


@dataclass(frozen=True)
class WindowScore:
    sum_logprob: float
    avg_logprob: float
    no_speech_prob: float
    text_logprob: float = 0.0  # mean log-probability of the text tokens alone (no timestamps, no end-of-text)


def score_window(runner: WhisperDecoderRunner, encoder_output: torch.Tensor, cross_states: tuple[list, list],
                 prompt: list[int], generated: list[int], rules: LogitRules, start_of_transcript_index: int,
                 no_speech: int, end_of_text: int, hidden: torch.Tensor | None = None,
                 log_probs: list[float] | None = None, no_speech_prob: float | None = None) -> WindowScore:
    """Score one row: `prompt` (as fed to the engine, forced prefix included), `generated` (what the engine added),
    the row's own encoder output [1, frames, width] and cross-attention states; `hidden`, when given, the final
    hidden states of every position but the last. `log_probs` and `no_speech_prob`, when both are given, are
    the generated tokens' log-probabilities and the no-speech probability decoding already computed (beam search
    on the native kernels: the bits this pass would compute), and no pass is made."""
    if log_probs is not None and no_speech_prob is not None:
        if len(log_probs) != len(generated):
            raise ValueError(f"{len(log_probs)} log-probabilities for {len(generated)} generated tokens")
        if not generated:
            return WindowScore(0.0, 0.0, no_speech_prob)
        return _score(torch.tensor(log_probs, dtype=torch.float32), generated, no_speech_prob, end_of_text)
    sequence = prompt + generated
    if hidden is None:
        cache = runner.new_cache(encoder_output, cross_states=cross_states, max_positions=len(sequence))
        ids = torch.tensor([sequence], device=runner.device)
        hidden = runner.hidden_states(cache, ids, 0)[0]
    begin = len(prompt)
    rows = [start_of_transcript_index, *range(begin - 1, len(sequence) - 1)]
    logits = runner.vocabulary_logits(hidden[rows][None])[0].float()
    no_speech_prob = float(logits[0].softmax(dim=-1)[no_speech])
    if not generated:
        return WindowScore(0.0, 0.0, no_speech_prob)
    scores = rules.apply(logits[1:], begin, sequence)
    log_probs = torch.log_softmax(scores.float(), dim=-1)
    device = log_probs.device
    chosen = log_probs[torch.arange(len(generated), device=device), torch.tensor(generated, device=device)]
    return _score(chosen, generated, no_speech_prob, end_of_text)


def _score(chosen: torch.Tensor, generated: list[int], no_speech_prob: float, end_of_text: int) -> WindowScore:
    """The score of the generated tokens from their log-probabilities `chosen` [len(generated)] (float32)."""
    sum_logprob = float(chosen.sum())
    text_tokens = len(generated) - (1 if generated[-1] == end_of_text else 0)
    is_text = torch.tensor([token < end_of_text for token in generated], device=chosen.device)
    text_logprob = float(chosen[is_text].mean()) if bool(is_text.any()) else 0.0
    return WindowScore(sum_logprob, sum_logprob / (text_tokens + 1), no_speech_prob, text_logprob)
