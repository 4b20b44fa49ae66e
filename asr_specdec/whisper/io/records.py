"""A transcription result as JSON: the record the command line writes (`--format json|jsonl`) and the web app
downloads, one definition for both."""

from __future__ import annotations


def result_record(result, file: str, comparison: dict | None = None) -> dict:
    record = {
        "file": file,
        "text": result.text,
        "segments": [segment_record(segment) for segment in result.segments],
        "language": result.language,
        "language_probability": result.language_probability,
        "duration": round(result.duration, 3),
        "mode": result.mode,
        "main_model": result.main_model,
        "assistant_model": result.assistant_model,
        "compute_type": result.compute_type,
        "backend": result.backend,
        "tokens": result.tokens,
        "stats": result.stats.as_dict(),
    }
    if getattr(result, "turns", None):
        record["turns"] = [{"start": turn.start, "end": turn.end, "speaker": turn.speaker} for turn in result.turns]
    if comparison is not None:
        record["comparison"] = comparison
    return record


def segment_record(segment) -> dict:
    """A segment as JSON: times and text, the window's scores when it was scored, its words when aligned."""
    record = {"start": segment.start, "end": segment.end, "text": segment.text}
    for name in ("avg_logprob", "compression_ratio", "no_speech_prob", "temperature"):
        if getattr(segment, name, None) is not None:
            record[name] = getattr(segment, name)
    if getattr(segment, "speaker", None) is not None:
        record["speaker"] = segment.speaker
    if getattr(segment, "words", None):
        record["words"] = [word.as_dict() for word in segment.words]
    return record
