"""The single-process engine: one evaluator, utterances one after another, rows stored as each finishes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

from .evaluator import UtteranceEvaluator
from .settings import EvalSettings
from .sources import Utterance
from .store import RowStore


def pending(utterances: Iterable[Utterance], limit: int | None, done: set[str]) -> Iterator[Utterance]:
    """The first `limit` utterances of the dataset (all when None), less those already done."""
    selected = itertools.islice(utterances, limit) if limit else iter(utterances)
    return (utterance for utterance in selected if utterance.id not in done)


class LocalEngine:
    def __init__(self, settings: EvalSettings):
        self.settings = settings
        self.evaluator = None

    def start(self) -> None:
        """Load the models (before any progress bar, so that a bad model fails alone and at once)."""
        self.evaluator = UtteranceEvaluator(self.settings)

    def run(self, utterances: Iterable[Utterance], store: RowStore, on_rows: Callable[[list[dict]], None]) -> None:
        for utterance in utterances:
            rows = self.evaluator.evaluate(utterance)
            store.append(rows)
            on_rows(rows)

    def stop(self) -> None:
        self.evaluator = None
