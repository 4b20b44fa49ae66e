"""Per-utterance rows: one per (utterance, variant), with everything the summary and a reader need."""

from __future__ import annotations

from .metrics import word_errors
from .settings import PLAIN, Variant

OK, FAILED = "ok", "failed"


def _base(utterance_id: str, variant: Variant, reference: str | None) -> dict:
    return {"id": utterance_id, "variant": variant.label, "mode": variant.mode, "draft_tokens": variant.draft_tokens,
            "reference": reference}


def ok_row(utterance_id: str, variant: Variant, reference: str | None, result, seconds: float) -> dict:
    return {**_base(utterance_id, variant, reference), "status": OK, "error": None,
            "duration": round(result.duration, 3), "text": result.text, "tokens": result.tokens,
            "seconds": round(seconds, 4), "stats": result.stats.as_dict(), **_speakers(result)}


def _speakers(result) -> dict:
    """With --speakers: who spoke when, as (start, end, speaker) turns."""
    turns = getattr(result, "turns", None)
    return {"turns": [[turn.start, turn.end, turn.speaker] for turn in turns]} if turns else {}


def failed_row(utterance_id: str, variant: Variant, reference: str | None, error: str) -> dict:
    return {**_base(utterance_id, variant, reference), "status": FAILED, "error": error, "duration": None,
            "text": None, "tokens": None, "seconds": None, "stats": None}


def score_utterance(rows: list[dict]) -> list[dict]:
    """Add word errors, parity with plain greedy, speedup over it and real-time factor to one utterance's rows."""
    plain = next((row for row in rows if row["mode"] == PLAIN and row["status"] == OK), None)
    for row in rows:
        ok = row["status"] == OK
        errors = word_errors(row["reference"], row["text"]) if ok and row["reference"] is not None else None
        row["word_errors"], row["reference_words"] = errors if errors else (None, None)
        row["identical_to_plain"] = row["tokens"] == plain["tokens"] if ok and plain else None
        row["speedup"] = round(plain["seconds"] / row["seconds"], 4) if ok and plain and row["seconds"] else None
        row["rtf"] = round(row["seconds"] / row["duration"], 4) if ok and row["duration"] else None
    return rows
