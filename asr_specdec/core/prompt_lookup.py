"""Prompt lookup: find the latest n-gram of the sequence earlier in it, propose what followed it there.

No model at all; it pays off on repetitive or input-grounded text (the prompt or previous window holds
what comes next).
"""

from __future__ import annotations

from .drafter import Draft, Drafter


class PromptLookupDrafter(Drafter):
    name = "prompt-lookup"
    uses_model = False

    def __init__(self, max_ngram_size: int = 3, min_ngram_size: int = 1, skip_prefix: int = 0):
        self.max_ngram_size = max_ngram_size
        self.min_ngram_size = min_ngram_size
        # tokens at the start of the sequence that are not text (e.g. Whisper's special prompt tokens)
        self.skip_prefix = skip_prefix

    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        searchable = sequence[self.skip_prefix:] if self.skip_prefix < len(sequence) else sequence
        for size in range(min(self.max_ngram_size, len(searchable) - 1), self.min_ngram_size - 1, -1):
            tail = searchable[-size:]
            # the latest earlier occurrence is the most likely to continue the same way
            for begin in range(len(searchable) - size - 1, -1, -1):
                if searchable[begin:begin + size] == tail:
                    follow = searchable[begin + size: begin + size + max_tokens]
                    if follow:
                        return Draft(tokens=follow)
        return Draft(tokens=[])
