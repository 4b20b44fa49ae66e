"""Per-variant numbers from the rows: WER, parity with plain decoding (greedy, or beam search with --beam-size),
speedup, acceptance, beam steps per main pass, real-time factor."""

from __future__ import annotations

from .metrics import ratio, spread
from .rows import OK
from .settings import PLAIN


def _total(rows: list[dict], key: str) -> float:
    return sum(row["stats"].get(key, 0) for row in rows)


def summarize_variant(label: str, rows: list[dict], plain_seconds: dict[str, float]) -> dict:
    ok = [row for row in rows if row["status"] == OK]
    referenced = [row for row in ok if row["word_errors"] is not None]
    compared = [row for row in ok if row["identical_to_plain"] is not None]
    # overall speedup: summed plain time over summed time, on the utterances both decoded
    timed = [row for row in ok if row["id"] in plain_seconds]
    first = rows[0] if rows else {}
    return {
        "variant": label,
        "mode": first.get("mode"),
        "draft_tokens": first.get("draft_tokens"),
        "utterances": len(ok),
        "failed": len(rows) - len(ok),
        "reference_words": sum(row["reference_words"] for row in referenced),
        "wer": ratio(sum(row["word_errors"] for row in referenced), sum(row["reference_words"] for row in referenced)),
        "parity": ratio(sum(row["identical_to_plain"] for row in compared), len(compared)),
        "speedup": ratio(sum(plain_seconds[row["id"]] for row in timed), sum(row["seconds"] for row in timed)),
        "speedup_per_utterance": spread([row["speedup"] for row in timed if row["speedup"] is not None]),
        "acceptance_rate": ratio(_total(ok, "accepted_tokens"), _total(ok, "drafted_tokens")),
        "tokens_per_main_pass": ratio(_total(ok, "new_tokens"), _total(ok, "main_passes")),
        # beam search: steps replayed per main pass (1.0 for plain beam search); None without beams
        "beam_steps_per_main_pass": (ratio(_total(ok, "beam_steps"), _total(ok, "main_passes"))
                                     if _total(ok, "beam_steps") else None),
        "rtf": ratio(sum(row["seconds"] for row in ok), sum(row["duration"] for row in ok)),
        "seconds": sum(row["seconds"] for row in ok),
        "audio_seconds": sum(row["duration"] for row in ok),
    }


def summarize(rows: list[dict], labels: list[str]) -> list[dict]:
    """One summary per variant label, in the given order."""
    plain_seconds = {row["id"]: row["seconds"] for row in rows if row["mode"] == PLAIN and row["status"] == OK}
    by_label = {label: [] for label in labels}
    for row in rows:
        by_label.setdefault(row["variant"], []).append(row)
    return [summarize_variant(label, by_label[label], plain_seconds) for label in labels]


def failed_utterances(rows: list[dict]) -> dict[str, str]:
    """{utterance id: first error} for every utterance with a failed row."""
    failures = {}
    for row in rows:
        if row["status"] != OK:
            failures.setdefault(row["id"], f"{row['variant']}: {row['error']}")
    return failures
