"""A result as the page shows it: a summary line, telemetry and comparison tables, and token highlights."""

from __future__ import annotations

from html import escape

from asr_specdec.whisper import SpeedComparison, TranscriptionResult

from .languages import language_name

FROM_DRAFT = "accepted from the draft"
FROM_MAIN = "main model's own token"
HIGHLIGHT_COLORS = {FROM_DRAFT: "#22c55e", FROM_MAIN: "#f97316"}
HIGHLIGHT_LEGEND = ("Each round the main model checks the draft in one pass and adds one token of its own: its "
                    "correction where the draft went wrong, or its next token when the whole draft was right. So "
                    "orange tokens appear even at 100% acceptance, one per round; with the drafter off, every "
                    "token is the main model's.")
TELEMETRY_HEADERS = ["measure", "value"]
COMPARISON_HEADERS = ["measure", "plain", "speculative"]
COMPARISON_MEASURES = ["mode", "time", "speedup", "identical output", "tokens per main pass", "acceptance rate"]


def telemetry_rows(result: TranscriptionResult) -> list[list[str]]:
    stats = result.stats
    return [
        ["mode", result.mode],
        ["models", result.main_model + (f" + {result.assistant_model}" if result.assistant_model else "")],
        ["language", language_name(result.language)],
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


def comparison_rows(comparison: SpeedComparison) -> list[list[str]]:
    plain, speculative = comparison.plain, comparison.speculative
    return [
        ["mode", plain.mode, speculative.mode],
        ["time", f"{comparison.plain_seconds:.2f} s", f"{comparison.speculative_seconds:.2f} s"],
        ["speedup", "1.00x", f"{comparison.speedup:.2f}x"],
        ["identical output", "", "yes" if comparison.identical else "NO"],
        ["tokens per main pass", f"{plain.stats.tokens_per_main_pass:.2f}",
         f"{speculative.stats.tokens_per_main_pass:.2f}"],
        ["acceptance rate", "", f"{speculative.stats.acceptance_rate:.0%}"],
    ]


def empty_comparison_html() -> str:
    """The comparison table before a comparison: what it will show, with no values yet."""
    return table_html(COMPARISON_HEADERS, [[measure, "", ""] for measure in COMPARISON_MEASURES])


def table_html(headers: list[str], rows: list[list[str]]) -> str:
    """A plain HTML table whose cells wrap: no value is cut off at phone width."""
    head = "".join(f"<th>{escape(header)}</th>" for header in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="result-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def summary_html(result: TranscriptionResult, language_source: str, note: str | None = None) -> str:
    """One line: the language by name (and `language_source`: how it was known), how long the audio was, how
    fast it went, what the drafter did."""
    parts = [f'Language: <strong class="language">{escape(language_name(result.language))}</strong> '
             f"({escape(language_source)})",
             f"{result.duration:.1f} s of audio",
             f"transcribed in {result.stats.total_seconds:.2f} s ({_real_time(result):.1f}x real time)",
             _drafter_summary(result)]
    line = f'<p class="summary-line">{" · ".join(parts)}</p>'
    return line + (f'<p class="note">{escape(note)}</p>' if note else "")


def comparison_summary_html(comparison: SpeedComparison, language_source: str, note: str | None = None) -> str:
    speculative = comparison.speculative
    same = "the same text" if comparison.identical else "DIFFERENT text (please report this)"
    line = (f'<p class="summary-line">{escape(speculative.mode)}: {comparison.speedup:.2f}x the speed of plain '
            f"decoding on this audio ({escape(comparison.method)}), {same}. Language: "
            f'<strong class="language">{escape(language_name(speculative.language))}</strong> '
            f"({escape(language_source)})</p>")
    return line + (f'<p class="note">{escape(note)}</p>' if note else "")


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


def _drafter_summary(result: TranscriptionResult) -> str:
    if result.mode == "off":
        return "drafter off"
    stats = result.stats
    return (f"drafter {escape(result.mode)}: {stats.acceptance_rate:.0%} of drafted tokens accepted, "
            f"{stats.tokens_per_main_pass:.2f} tokens per main pass")


def _real_time(result: TranscriptionResult) -> float:
    return result.duration / result.stats.total_seconds if result.stats.total_seconds else 0.0
