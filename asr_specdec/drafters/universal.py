"""Universal assisted decoding: an assistant whose tokenizer differs from the main model's.

The drafter keeps its own token sequence: its own Whisper prompt (start, language/task when it is
multilingual, no-timestamps) followed by the main model's text so far, re-encoded with the assistant's
tokenizer. It drafts in its own vocabulary, decodes the draft to text and re-encodes main text + draft
text with the main tokenizer; the main tokens beyond those already generated form the draft. Special
tokens never cross between vocabularies: each side keeps its own prompt, and the assistant's
end-of-text becomes the main model's end-of-text.
"""

from __future__ import annotations

from ..decoder import DecoderTarget, WhisperDecoderRunner
from ..logits import Sampling
from ..whisper_tokens import WhisperTokens
from .base import Draft, DraftContext
from .model_drafter import ModelDrafter
from .retokenize import continuation_tokens


class UniversalDrafter(ModelDrafter):
    name = "universal"

    def __init__(self, assistant_model, assistant_tokenizer, main_tokenizer, main_prompt_length: int,
                 language: str = "en", task: str = "transcribe", confidence_threshold: float = 0.0):
        super().__init__(confidence_threshold)
        self.model = assistant_model.eval()
        self.runner = WhisperDecoderRunner(assistant_model)
        self.assistant_tokenizer = assistant_tokenizer
        self.main_tokenizer = main_tokenizer
        self.main_prompt_length = main_prompt_length
        self.tokens = WhisperTokens.from_model(assistant_model)
        language_id = self.tokens.language_token(language) if self.tokens.multilingual else None
        self.assistant_prompt = self.tokens.prompt(language_id, task)

    def start(self, context: DraftContext) -> None:
        super().start(context)
        features = context.input_features.to(self.runner.device, self.runner.dtype)
        encoder_output = self.model.model.encoder(features).last_hidden_state
        self.target = DecoderTarget(self.runner, self.runner.new_cache(encoder_output))
        # the assistant applies its own rules; drafts are deterministic (greedy in its vocabulary)
        self.assistant_context = DraftContext(
            rules=self.tokens.rules(len(self.assistant_prompt)), sampling=Sampling(),
            max_positions=self.target.max_positions, eos_token_id=self.tokens.end_of_text)

    def _main_text(self, sequence: list[int]) -> str | None:
        generated = sequence[self.main_prompt_length:]
        # Whisper numbers every special and timestamp token after end-of-text
        if any(token >= self.context.eos_token_id for token in generated):
            return None  # nothing sensible to re-tokenize
        text = self.main_tokenizer.decode(generated)
        return None if "\ufffd" in text else text

    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        text = self._main_text(sequence)
        if text is None:
            return Draft(tokens=[])
        assistant_sequence = self.assistant_prompt + self.assistant_tokenizer.encode(text, add_special_tokens=False)
        main_context, self.context = self.context, self.assistant_context
        try:
            proposal = super().draft(assistant_sequence, max_tokens)
        finally:
            self.context = main_context
        ends = proposal.tokens and proposal.tokens[-1] == self.tokens.end_of_text
        draft_text = self.assistant_tokenizer.decode([t for t in proposal.tokens if t < self.tokens.end_of_text])
        generated = sequence[self.main_prompt_length:]
        new_tokens = continuation_tokens(self.main_tokenizer, generated, text, draft_text)
        if new_tokens is None:
            new_tokens = self.main_tokenizer.encode(draft_text, add_special_tokens=False)
        if ends:
            new_tokens = new_tokens + [self.context.eos_token_id]
        return Draft(tokens=new_tokens[:max_tokens], forward_passes=proposal.forward_passes)

