"""What a window may ask for besides its tokens, computed from its final tokens after decoding: the scores that
openai's transcribe judges it by (scoring.py) and its words with their times (alignment.py). Both read only
the final tokens, so they are the same whichever drafter produced them."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..runtime.cross_attention import decode_with_cross_attention, default_alignment_heads
from .alignment import AlignedWord, align_words, token_boundaries
from .scoring import WindowScore, score_window


@dataclass
class WindowExtras:
    score: WindowScore | None = None
    words: list[AlignedWord] | None = None  # times in seconds from the window's start


def window_extras(pipeline, window, row: int, encoder_output: torch.Tensor, cross_states: tuple[list, list],
                  prompt: list[int], forced: list[int], generated: list[int], rules, language_id: int | None,
                  hidden: torch.Tensor | None = None, no_speech_prob: float | None = None,
                  log_probs: list[float] | None = None) -> WindowExtras:
    """The extras `window` (batch row `row` of a decode call) asked for; `prompt` is its prompt without the
    `forced` prefix, `generated` what the engine produced after both; `hidden` the main model's final hidden
    states of every position but the last, when decoding kept them; `no_speech_prob` the one the pipeline read
    before generating (the score keeps it, so that the judgement after decoding is the one made before);
    `log_probs` the generated tokens' log-probabilities when decoding kept them (then, with `no_speech_prob`,
    the score needs no pass)."""
    tokens = pipeline.tokens
    extras = WindowExtras()
    if window.score:
        start_index = len(prompt) - 1 - (0 if window.timestamps else 1)
        start_index -= 2 if tokens.multilingual else 0
        extras.score = score_window(pipeline.runner, encoder_output, cross_states, prompt + forced, generated,
                                    rules, start_index, tokens.no_speech, tokens.end_of_text, hidden,
                                    log_probs, no_speech_prob)
        if no_speech_prob is not None:
            extras.score = replace(extras.score, no_speech_prob=no_speech_prob)
    if window.word_tokens is not None:
        extras.words = _aligned_words(pipeline, window, cross_states, window.word_tokens(forced + generated),
                                      language_id)
    return extras


def _aligned_words(pipeline, window, cross_states, text_tokens: list[int], language_id: int | None
                   ) -> list[AlignedWord]:
    tokens = pipeline.tokens
    text_tokens = [token for token in text_tokens if token < tokens.end_of_text]
    if not text_tokens:
        return []
    start = tokens.prompt(language_id, window.task, False)  # ends with <|notimestamps|>
    sequence = start + text_tokens + [tokens.end_of_text]
    logits, head_scores = decode_with_cross_attention(pipeline.runner, cross_states[0], cross_states[1], sequence,
                                                      default_alignment_heads(pipeline.model))
    first_text_row = len(start) - 1
    text_logits = logits[first_text_row: first_text_row + len(text_tokens), :tokens.end_of_text].float()
    device = text_logits.device
    probabilities = text_logits.softmax(dim=-1)[torch.arange(len(text_tokens), device=device),
                                                torch.tensor(text_tokens, device=device)].tolist()
    frames = pipeline.frames
    audio_frames = window.audio_frames if window.audio_frames is not None else frames.window
    boundaries = token_boundaries(head_scores, first_text_row, len(text_tokens), audio_frames // frames.per_timestamp,
                                  frames.timestamp_seconds)
    codes = {value: key.strip("<|>") for key, value in tokens.language_ids.items()}
    language = codes.get(language_id, "en")
    return align_words(pipeline.processor.tokenizer, text_tokens, boundaries, probabilities, tokens.end_of_text,
                       language)


class RecipeAnalysis:
    """The recipe's answer to the pipeline's WindowAnalysis: `window_extras`, and a silent window's score."""

    def __call__(self, *arguments, **keywords) -> WindowExtras:
        return window_extras(*arguments, **keywords)

    def silent(self, window, no_speech_prob: float) -> WindowExtras:
        return WindowExtras(score=WindowScore(0.0, 0.0, no_speech_prob),
                            words=[] if window.word_tokens is not None else None)


recipe_analysis = RecipeAnalysis()
