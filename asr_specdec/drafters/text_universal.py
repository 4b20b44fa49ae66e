"""Universal assisted decoding for causal LMs: an assistant whose tokenizer differs from the main model's.

Each round the main sequence becomes text, the text becomes the assistant's tokens (its cache syncs by
common prefix, so only the changed tail is re-fed), the assistant drafts greedily in its own vocabulary, and
the draft's text is re-encoded as a continuation of the main model's last few tokens (see
`retokenize.continuation_tokens`, shared with the Whisper universal drafter). Special tokens never cross:
each side keeps its own, and the assistant's end of sequence becomes the main model's.
"""

from __future__ import annotations

from ..logits import LogitRules, Sampling
from .base import Draft, DraftContext
from .model_drafter import ModelDrafter
from .retokenize import continuation_tokens, text_after

# main-model tokens re-encoded with the draft, tried in turn until one re-encodes to itself
TAIL_WINDOWS = (12, 4, 1)


class TextUniversalDrafter(ModelDrafter):
    name = "universal"

    def __init__(self, assistant_model, assistant_tokenizer, main_tokenizer, confidence_threshold: float = 0.0):
        from ..text import eos_token_ids

        super().__init__(confidence_threshold)
        self.model = assistant_model.eval()
        self.assistant_tokenizer = assistant_tokenizer
        self.main_tokenizer = main_tokenizer
        self.assistant_eos = set(eos_token_ids(assistant_model, assistant_tokenizer))
        self.main_special = set(main_tokenizer.all_special_ids)

    def start(self, context: DraftContext) -> None:
        from ..text import CausalLMTarget, context_length

        super().start(context)
        self.target = CausalLMTarget(self.model, max_positions=context_length(self.model))
        self.prompt: list[int] | None = None
        # the assistant drafts greedily under no rules of its own; drafts are deterministic (one-hot)
        self.assistant_context = DraftContext(
            rules=LogitRules(), sampling=Sampling(), max_positions=self.target.max_positions,
            eos_token_id=min(self.assistant_eos) if self.assistant_eos else -1)

    def _assistant_sequence(self, sequence: list[int]) -> list[int] | None:
        if self.prompt is None:
            self.prompt = list(sequence)  # the engine's first round drafts after the bare prompt
            self.prompt_text = self.main_tokenizer.decode(self.prompt, skip_special_tokens=True)
        generated = sequence[len(self.prompt):]
        if any(token in self.main_special for token in generated):
            return None
        text = self.prompt_text + text_after(self.main_tokenizer, self.prompt[-8:], generated)
        return self.assistant_tokenizer(text)["input_ids"]

    def _main_tail(self, sequence: list[int], size: int) -> tuple[list[int], str] | None:
        """The last `size` main tokens (none special) and their text, if that text re-encodes to them."""
        tail = sequence[-size:]
        if any(token in self.main_special for token in tail):
            return None
        text = self.main_tokenizer.decode(tail)
        if "\ufffd" in text or self.main_tokenizer.encode(text, add_special_tokens=False) != tail:
            return None
        return tail, text

    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        assistant_sequence = self._assistant_sequence(sequence)
        if not assistant_sequence:
            return Draft(tokens=[])
        main_context, self.context = self.context, self.assistant_context
        try:
            proposal = super().draft(assistant_sequence, max_tokens)
        finally:
            self.context = main_context
        proposed = proposal.tokens
        ends = bool(proposed) and proposed[-1] in self.assistant_eos
        if ends:
            proposed = proposed[:-1]
        draft_text = text_after(self.assistant_tokenizer, assistant_sequence[-8:], proposed)
        new_tokens = None
        if draft_text:
            for size in TAIL_WINDOWS:
                tail = self._main_tail(sequence, size)
                if tail is not None:
                    new_tokens = continuation_tokens(self.main_tokenizer, tail[0], tail[1], draft_text)
                    if new_tokens is not None:
                        break
            if new_tokens is None:
                new_tokens = self.main_tokenizer.encode(draft_text, add_special_tokens=False)
        new_tokens = new_tokens or []
        if ends and self.context.eos_token_id >= 0:
            new_tokens = new_tokens + [self.context.eos_token_id]
        return Draft(tokens=new_tokens[:max_tokens], forward_passes=proposal.forward_passes)
