"""A result as the page shows it: telemetry rows, token highlights, and the transcript file to download."""

from __future__ import annotations

import uuid
from pathlib import Path

from asr_specdec.whisper import TranscriptionResult
from asr_specdec.whisper.formats import to_srt, to_text, to_vtt

FROM_DRAFT = "accepted from draft"
FROM_MAIN = "supplied by main model"
HIGHLIGHT_COLORS = {FROM_DRAFT: "#22c55e", FROM_MAIN: "#f97316"}
RENDERERS = {"text": (to_text, "txt"), "srt": (to_srt, "srt"), "vtt": (to_vtt, "vtt")}
TELEMETRY_HEADERS = ["measure", "value"]
COMPARISON_HEADERS = ["measure", "plain", "speculative"]


def telemetry_rows(result: TranscriptionResult) -> list[list[str]]:
    stats = result.stats
    return [
        ["mode", result.mode],
        ["models", result.main_model + (f" + {result.assistant_model}" if result.assistant_model else "")],
        ["audio", f"{result.duration:.2f} s"],
        ["tokens generated", str(stats.new_tokens)],
        ["drafted / accepted", f"{stats.drafted_tokens} / {stats.accepted_tokens}"],
        ["acceptance rate", f"{stats.acceptance_rate:.0%}"],
        ["tokens per main pass", f"{stats.tokens_per_main_pass:.2f}"],
        ["time", f"{stats.total_seconds:.2f} s"],
        ["encoder / draft / verify", f"{stats.encoder_seconds:.2f} / {stats.draft_seconds:.2f} / "
                                     f"{stats.verify_seconds:.2f} s"],
        ["speed", f"{stats.tokens_per_second:.1f} tokens/s, {_real_time(result):.1f}x real time"],
    ]


def comparison_rows(plain: TranscriptionResult, speculative: TranscriptionResult) -> list[list[str]]:
    plain_seconds, speculative_seconds = plain.stats.total_seconds, speculative.stats.total_seconds
    return [
        ["mode", plain.mode, speculative.mode],
        ["time", f"{plain_seconds:.2f} s", f"{speculative_seconds:.2f} s"],
        ["speedup", "1.00x", f"{plain_seconds / max(speculative_seconds, 1e-9):.2f}x"],
        ["identical output", "", "yes" if plain.tokens == speculative.tokens else "NO"],
        ["tokens per main pass", f"{plain.stats.tokens_per_main_pass:.2f}",
         f"{speculative.stats.tokens_per_main_pass:.2f}"],
        ["acceptance rate", "", f"{speculative.stats.acceptance_rate:.0%}"],
    ]


def token_highlights(result: TranscriptionResult, tokenizer) -> list[tuple[str, str]]:
    """(text, where it came from) per generated token; special tokens, which have no text, are left out."""
    pieces, pending, pending_from_draft = [], [], []
    for token, from_draft in zip(result.tokens, result.stats.token_from_draft):
        pending.append(token)
        pending_from_draft.append(from_draft)
        text = tokenizer.decode(pending, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            continue  # a character split across byte-level tokens: wait for the token that completes it
        if text:
            pieces.append((text, FROM_DRAFT if all(pending_from_draft) else FROM_MAIN))
        pending, pending_from_draft = [], []
    if pending and (text := tokenizer.decode(pending, skip_special_tokens=True)):
        pieces.append((text, FROM_DRAFT if all(pending_from_draft) else FROM_MAIN))
    return pieces


def write_transcript(result: TranscriptionResult, output_format: str, directory: Path, stem: str) -> Path:
    render, extension = RENDERERS[output_format]
    folder = directory / uuid.uuid4().hex  # two users downloading "clip.srt" must not overwrite each other
    folder.mkdir(parents=True)
    path = folder / f"{stem}.{extension}"
    text = render(result.segments)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    return path


def _real_time(result: TranscriptionResult) -> float:
    return result.duration / result.stats.total_seconds if result.stats.total_seconds else 0.0
