"""Universal assisted decoding for causal LMs: an assistant whose tokenizer differs from the main model's.

Each round the main sequence becomes text, the text becomes the assistant's tokens (the assistant drafter's
cache syncs by common prefix, so only the changed tail is re-fed), the assistant drafts greedily in its own
vocabulary, and the draft's text is re-encoded as the continuation of the main model's last tokens (see
`retokenize.continuation_tokens`, shared with the Whisper universal drafter). Special tokens never cross:
each side keeps its own, and the assistant's end of sequence becomes the main model's.
"""

from __future__ import annotations

from ...core.drafter import Draft, DraftContext, Drafter
from ...core.logits import LogitRules, Sampling
from ...core.retokenize import continuation_tokens, incomplete_tail, text_after
from ..target import context_length, eos_token_ids
from .assistant import TextAssistantDrafter

# main-model tokens re-encoded with the draft, tried in turn until one window re-encodes to itself
TAIL_WINDOWS = (12, 4, 1)
CONTEXT_TOKENS = 8  # tokens decoded before new ones, so that leading spaces and split characters come out right


class TextUniversalDrafter(Drafter):
    name = "universal"

    def __init__(self, assistant_model, assistant_tokenizer, main_tokenizer, confidence_threshold: float = 0.0):
        # the assistant drafts in its own vocabulary, as a same-tokenizer assistant would
        self.assistant = TextAssistantDrafter(assistant_model, None, confidence_threshold)
        self.assistant_tokenizer = assistant_tokenizer
        self.main_tokenizer = main_tokenizer
        self.assistant_eos = set(eos_token_ids(assistant_model, assistant_tokenizer))
        self.assistant_special = set(assistant_tokenizer.all_special_ids) | self.assistant_eos
        self.main_special = set(main_tokenizer.all_special_ids)

    def start(self, context: DraftContext) -> None:
        super().start(context)
        # greedy under no rules of its own: the drafts are deterministic (one-hot) whatever the main sampling
        self.assistant.start(DraftContext(
            rules=LogitRules(), sampling=Sampling(), max_positions=context_length(self.assistant.model),
            eos_token_id=min(self.assistant_eos) if self.assistant_eos else -1))

    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        pending = incomplete_tail(self.main_tokenizer, sequence[-CONTEXT_TOKENS:])
        complete = sequence[: len(sequence) - pending]
        text = self.main_tokenizer.decode(complete, skip_special_tokens=True)
        assistant_sequence = self.assistant_tokenizer(text)["input_ids"]
        if not assistant_sequence:
            return Draft(tokens=[])
        proposal = self.assistant.draft(assistant_sequence, max_tokens)
        proposed, ends = self._cut_at_special(proposal.tokens)
        draft_text = text_after(self.assistant_tokenizer, assistant_sequence[-CONTEXT_TOKENS:], proposed)
        tokens = self._main_continuation(complete, sequence[len(complete):], draft_text) if draft_text else []
        if tokens is None:
            return Draft(tokens=[], forward_passes=proposal.forward_passes)
        if ends and self.context.eos_token_id >= 0:
            tokens = tokens + [self.context.eos_token_id]
        return Draft(tokens=tokens[:max_tokens], forward_passes=proposal.forward_passes)

    def _cut_at_special(self, proposed: list[int]) -> tuple[list[int], bool]:
        """The draft up to its first special token, and whether that token ends the sequence."""
        for index, token in enumerate(proposed):
            if token in self.assistant_special:
                return proposed[:index], token in self.assistant_eos
        return proposed, False

    def _main_continuation(self, complete: list[int], pending: list[int], draft_text: str) -> list[int] | None:
        """`draft_text` as main tokens following `complete` + `pending` (the first bytes of a character the
        draft text spells whole), or None when no re-encoding continues them."""
        for size in TAIL_WINDOWS:
            tail = complete[-size:]
            if any(token in self.main_special for token in tail):
                continue
            tail_text = self.main_tokenizer.decode(tail)
            if self.main_tokenizer.encode(tail_text, add_special_tokens=False) != tail:
                continue  # this window is not how the tokenizer spells its own text
            tokens = continuation_tokens(self.main_tokenizer, tail + pending, tail_text, draft_text)
            if tokens is not None:
                return tokens
        if pending:
            return None
        return self.main_tokenizer.encode(draft_text, add_special_tokens=False)
