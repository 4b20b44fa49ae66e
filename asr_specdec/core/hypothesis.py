"""Drafting from the previous hypothesis: live transcription re-decodes a growing buffer every half second, and
each decode repeats almost all of the last one. So the last decode's tokens are proposed as the draft, in long
runs (they are usually all accepted), and once the new audio's tail begins, where the last hypothesis has nothing
left to say, a fallback drafter (e.g. the quantized self) takes over.

No model of its own: it aligns the generated tokens to the hypothesis (by position while they agree; by the latest
tokens, nearest the expected place, after the main model went another way) and proposes what follows there.
"""

from __future__ import annotations

from dataclasses import dataclass

from .drafter import Draft, DraftContext, Drafter

ANCHOR_TOKENS = 3  # the most generated tokens matched to find the place in the hypothesis again after a change


@dataclass
class HypothesisUsage:
    """What one decode drafted from each source, and how much of it the main model accepted."""

    hypothesis_drafted: int = 0
    hypothesis_accepted: int = 0
    fallback_drafted: int = 0
    fallback_accepted: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class HypothesisDrafter(Drafter):
    """Proposes the expected tokens (`expect`) after the prompt, then falls back to `fallback` (None: no draft).

    One row, one decode at a time: call `expect(tokens)` before each decode with the tokens the last decode
    generated (adjusted to the new buffer). `fallback_tokens` caps the fallback's drafts, since the engine's
    draft length is set for long hypothesis drafts.
    """

    name = "hypothesis"
    uses_model = False

    def __init__(self, fallback: Drafter | None = None, fallback_tokens: int = 8):
        self.fallback = fallback
        self.fallback_tokens = fallback_tokens
        self.hypothesis: list[int] = []
        self._begin = 0
        self._offset = 0  # hypothesis index of the next token = generated length + offset
        self._finished = False  # followed to its end: what comes now is new, the fallback's to draft
        self._drafts: list[tuple[str, int, list[int]]] = []  # (source, generated position, tokens)

    def expect(self, tokens: list[int]) -> None:
        """The tokens the next decode is likely to generate after its prompt."""
        self.hypothesis = list(tokens)

    def start(self, context: DraftContext) -> None:
        super().start(context)
        self._begin = context.rules.begin_index  # where generation starts: the prompt's length
        self._offset = 0
        self._finished = False
        self._drafts = []
        if self.fallback is not None:
            self.fallback.start(context)

    def keep(self, rows, memo: dict) -> None:
        if self.fallback is not None:
            self.fallback.keep(rows, memo)

    def draft(self, sequence: list[int], max_tokens: int) -> Draft:
        generated = sequence[self._begin:]
        proposal = [] if self._finished or self._last_hypothesis_draft_failed(generated) \
            else self._follow(generated, max_tokens)
        if proposal:
            self._drafts.append(("hypothesis", len(generated), proposal))
            return Draft(tokens=proposal)
        if self.fallback is None:
            return Draft(tokens=[])
        draft = self.fallback.draft_rows([sequence], [min(max_tokens, self.fallback_tokens)])[0]
        self._drafts.append(("fallback", len(generated), list(draft.tokens)))
        return draft

    def _follow(self, generated: list[int], max_tokens: int) -> list[int]:
        """What the hypothesis says comes next, or [] where it has nothing (its end, or no place found)."""
        hypothesis = self.hypothesis
        if not generated:
            return hypothesis[:max_tokens]
        expected = len(generated) + self._offset
        if 0 < expected <= len(hypothesis):
            behind = [generated[-back] == hypothesis[expected - back]
                      for back in range(1, min(ANCHOR_TOKENS, len(generated), expected) + 1)]
            # still in step; or the main model just put another token in the place of the hypothesis's one
            if all(behind[1:]):
                self._finished = expected == len(hypothesis)
                return hypothesis[expected:expected + max_tokens]
        place = None
        for size in range(min(ANCHOR_TOKENS, len(generated)), 0, -1):
            tail = generated[-size:]
            places = [end for end in range(size, len(hypothesis) + 1) if hypothesis[end - size:end] == tail]
            if places:
                place = min(places, key=lambda end: (abs(end - expected), end))
                break
        if place is None:
            return []
        self._offset = place - len(generated)
        return hypothesis[place:place + max_tokens]

    def _last_hypothesis_draft_failed(self, generated: list[int]) -> bool:
        """True right after a hypothesis draft of which the main model took nothing: the fallback drafts this
        round (it follows the new text), and the hypothesis is tried again on the next."""
        if not self._drafts or self._drafts[-1][0] != "hypothesis":
            return False
        _, position, tokens = self._drafts[-1]
        return _accepted(tokens, generated[position:]) == 0

    def usage(self, generated: list[int]) -> HypothesisUsage:
        """Drafted and accepted tokens per source in the decode that produced `generated` (its new tokens)."""
        usage = HypothesisUsage()
        for source, position, tokens in self._drafts:
            accepted = _accepted(tokens, generated[position:])
            if source == "hypothesis":
                usage.hypothesis_drafted += len(tokens)
                usage.hypothesis_accepted += accepted
            else:
                usage.fallback_drafted += len(tokens)
                usage.fallback_accepted += accepted
        return usage


def _accepted(draft: list[int], actual: list[int]) -> int:
    """How many of a draft's tokens the verifier kept: its longest prefix equal to what was generated."""
    count = 0
    for proposed, chosen in zip(draft, actual):
        if proposed != chosen:
            break
        count += 1
    return count
