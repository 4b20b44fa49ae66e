"""What one update of a live stream commits: a pure decision over the state the last update left (the committed
text still in the buffer, the last hypothesis's tentative text, whether it was heard and long enough to agree
with), the new hypothesis's text and what its audio says (heard, speech it skipped). LocalAgreement-2: the text
two heard hypotheses in a row share, cut back to whole words; all of it at the end of a stream or for the speech
a decode skipped at its start (`whole`); never past speech the decode skipped."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..recipe.fallback import Recipe, is_silent
from . import agreement


@dataclass(frozen=True)
class Agreement:
    """What the last update leaves the next one to agree with."""

    in_buffer: tuple[int, ...] = ()  # committed text tokens still in the buffer (the hypothesis's start)
    tentative: tuple[int, ...] = ()  # the last hypothesis's text after them
    heard: bool = False  # the last hypothesis may be agreed with (its no-speech probability was low)
    context: bool = False  # its buffer was long enough to be agreed with


@dataclass(frozen=True)
class Commit:
    start: int  # where the committed text ends in the new hypothesis's text
    committed: int  # the text tokens committed after this update (text[start:committed] are new)
    unreached: tuple[int, ...] = field(default=())  # committed tokens the hypothesis stopped short of
    heard_end: int | None = None  # text tokens before speech the decode skipped (None: it skipped none)


def judge(no_speech_prob: float | None, avg_logprob: float | None, recipe: Recipe) -> tuple[bool, bool]:
    """(silent, heard) of a decode with these scores (None: it has none): openai's rule judges it silent (its text
    counts as none, as offline decoding skips such a window); heard when its no-speech probability alone is at most
    the threshold (else it commits nothing by agreement and is not agreed with by the next)."""
    if no_speech_prob is None:
        return False, True
    threshold = recipe.no_speech_threshold
    return is_silent(no_speech_prob, avg_logprob, recipe), threshold is None or no_speech_prob <= threshold


def decide(last: Agreement, text: list[int], heard: bool, whole: bool, skipped: Callable[[int], int | None],
           starts_word: Callable[[int], bool], token_text: Callable[[int], str] | None = None) -> Commit:
    """The commit of an update whose hypothesis has `text` (its text tokens): `heard` (no-speech probability at
    most the threshold), `whole` (the stream's end, or a decode of skipped speech: all of it), `skipped(start)`
    (the text tokens before speech the decode skipped, given where the committed text ends in `text`; None: it
    skipped none)."""
    start, held = agreement.committed_match(list(last.in_buffer), text, starts_word, token_text)
    heard_end = skipped(start)
    unreached = tuple(last.in_buffer[held:])
    tail = text[start:]
    if whole:
        agreed = len(tail)
    elif heard and last.heard and last.context and not unreached:
        agreed = agreement.agreed_length([list(last.tentative), tail], starts_word)
    else:
        agreed = 0
    committed = start + agreed
    if heard_end is not None:
        committed = max(min(committed, heard_end), start)
    return Commit(start, committed, unreached, heard_end)
