"""The one place a call's options become what the pipeline decodes: `TranscribeOptions` (with the call's prompt
tokens) plus the facts of one window (its features, language, place in the file) make one `Window`. Every path
of a transcribe call (one window, sequential, chunked, VAD) and of transcribe_batch builds its windows here, so
an option honoured by one is honoured by all."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import torch

from .longform.chunks import window_text_tokens
from .longform.sequential import complete_text_tokens
from .options import PromptTokens, TranscribeOptions, window_context
from .runtime.pipeline import Window, WindowPipeline


@dataclass(frozen=True)
class CallWindows:
    """Builds the windows of one call: what is the same for each of them."""

    pipeline: WindowPipeline
    options: TranscribeOptions
    prompts: PromptTokens

    def window(self, features: torch.Tensor, language_id: int | None, timestamps: bool, *,
               previous: list[int] | None = None, audio_frames: int | None = None, first: bool = True,
               complete_segments: bool = False) -> Window:
        """A window: the options' prompt pieces (the prefix on the call's `first` window only; hotwords and
        `previous` text as its <|startofprev|> context), rules, limits and sampling, and word alignment of its text
        when word timestamps are asked (`complete_segments`: only the segments a sequential window keeps)."""
        options, tokens = self.options, self.pipeline.tokens
        word_tokens = None
        if options.word_timestamps:
            word_tokens = (partial(complete_text_tokens, timestamp_begin=tokens.timestamp_begin,
                                   end_of_text=tokens.end_of_text) if complete_segments and timestamps
                           else window_text_tokens(tokens.end_of_text))
        prefix = tuple(self.prompts.prefix) if self.prompts.prefix and first else None
        return Window(features, language_id, timestamps,
                      window_context(self.prompts.hotwords, previous, tokens.prompt_limit),
                      prefix=prefix, word_tokens=word_tokens, audio_frames=audio_frames, task=options.task,
                      suppression=options.suppression, max_new_tokens=options.max_new_tokens,
                      repetition_penalty=options.repetition_penalty,
                      no_repeat_ngram_size=options.no_repeat_ngram_size,
                      sampling=None if options.sampling == self.pipeline.sampling else options.sampling,
                      window_frames=None if options.chunk_length is None
                      else self.pipeline.chunk_frames(options.chunk_length).window)
