"""Drafting from the previous hypothesis: live transcription re-decodes a growing buffer every half second, and
each decode repeats almost all of the last one. So the last decode's tokens are proposed as the draft, in long
runs (they are usually all accepted), and once the new audio's tail begins, where the last hypothesis has nothing
left to say, a fallback drafter (e.g. the quantized self) takes over.

No model of its own: it aligns the generated tokens to the hypothesis (by position while they agree; by the latest
tokens, nearest the expected place, after the main model went another way) and proposes what follows there: in long
runs where the place is certain, in short probes where it is a guess (right after the main model changed a token,
or found by one token or far away): a verification pass grows with every token it checks, so a long wrong draft
costs several steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from .drafter import Draft, DraftContext, Drafter

ANCHOR_TOKENS = 3  # the most generated tokens matched to find the place in the hypothesis again after a change
NEAR_TOKENS = 8  # a place found by two or more tokens this close to the expected one is certain; farther, a guess
PROBE_TOKENS = 4  # the draft from a guessed place: right about half the time after the main model changed a token


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
        proposal = [] if self._finished else self._follow(generated, max_tokens)
        if proposal:
            self._drafts.append(("hypothesis", len(generated), proposal))
            return Draft(tokens=proposal)
        if self.fallback is None:
            return Draft(tokens=[])
        draft = self.fallback.draft_rows([sequence], [min(max_tokens, self.fallback_tokens)])[0]
        self._drafts.append(("fallback", len(generated), list(draft.tokens)))
        return draft

    def _follow(self, generated: list[int], max_tokens: int) -> list[int]:
        """What the hypothesis says comes next, or [] where it has nothing (its end, no place found, or only a guess
        right after a hypothesis draft the main model took nothing of)."""
        hypothesis = self.hypothesis
        if not generated:
            return hypothesis[:max_tokens]
        place, certain = self._place(generated)
        if place is None or not certain and self._last_hypothesis_draft_failed(generated):
            return []
        if certain:  # a guess leaves the expected place where it was, so a wrong one misleads nothing after it
            self._offset = place - len(generated)
        self._finished = certain and place == len(hypothesis)
        return hypothesis[place:place + (max_tokens if certain else min(max_tokens, PROBE_TOKENS))]

    def _place(self, generated: list[int]) -> tuple[int | None, bool]:
        """(hypothesis index of the next token or None, whether that place is certain rather than a guess)."""
        hypothesis = self.hypothesis
        expected = len(generated) + self._offset
        if 0 < expected <= len(hypothesis):
            behind = [generated[-back] == hypothesis[expected - back]
                      for back in range(1, min(ANCHOR_TOKENS, len(generated), expected) + 1)]
            if all(behind):
                return expected, True
            if all(behind[1:]):  # the main model's last token differs from the hypothesis's: guess how
                if expected < len(hypothesis) and generated[-1] == hypothesis[expected]:
                    return expected + 1, False  # it left the hypothesis's token out
                return expected, False  # it put another in its place (or inserted one)
        found = []  # (matched tokens, the place after them nearest the expected one), the longest match first
        for size in range(min(ANCHOR_TOKENS, len(generated)), 0, -1):
            tail = generated[-size:]
            places = [end for end in range(size, len(hypothesis) + 1) if hypothesis[end - size:end] == tail]
            if places:
                found.append((size, min(places, key=lambda end: (abs(end - expected), end))))
        near = [(size, place) for size, place in found if abs(place - expected) <= NEAR_TOKENS]
        if near:
            return near[0][1], near[0][0] > 1
        return (found[0][1], False) if found else (None, False)

    def _last_hypothesis_draft_failed(self, generated: list[int]) -> bool:
        """True right after a hypothesis draft of which the main model took nothing (the last round's draft, and only
        the main model's own token came): a guessed place waits a round (the fallback, if any, drafts it), so that a
        rewording is not probed token after token."""
        return bool(self._drafts) and self._drafts[-1][0] == "hypothesis" and self._drafts[-1][1] + 1 == len(generated)

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
