"""The report: JSON with every row and the summaries, a Markdown table, and the plot, written together."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from .plot import write_plot
from .summary import failed_utterances, summarize

JSON_FILE, MARKDOWN_FILE, PLOT_FILE = "report.json", "report.md", "report.png"


def build_report(rows: list[dict], labels: list[str], context: dict) -> dict:
    """`context` holds what the rows cannot say: command, engine, dataset, settings, machine, models, notes."""
    order = {label: index for index, label in enumerate(labels)}
    rows = sorted(rows, key=lambda row: (row["id"], order.get(row["variant"], len(order))))
    return {"created": datetime.now(timezone.utc).isoformat(timespec="seconds"), **context,
            "summary": summarize(rows, labels), "failed": failed_utterances(rows), "rows": rows}


def _percent(value) -> str:
    return "" if value is None else f"{value:.1%}"


def _times(value) -> str:
    return "" if value is None else f"{value:.2f}x"


def _number(value, digits=2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _model_line(role: str, model: dict | None) -> list[str]:
    if not model:
        return []
    checksum = f", sha256 of its {model['sha256_of']} {model['sha256']}" if model.get("sha256") else ""
    return [f"- {role}: `{model['name']}` ({model['source']}{checksum})"]


def _table_row(entry: dict, beams: bool) -> str:
    spread = entry["speedup_per_utterance"]
    median = (f"{_times(spread['median'])} [{_number(spread['p25'])}–{_number(spread['p75'])}]"
              if spread["median"] is not None else "")
    per_pass = entry.get("beam_steps_per_main_pass") if beams else entry["tokens_per_main_pass"]
    return (f"| {entry['mode']} | {entry['draft_tokens'] or ''} | {entry['utterances']} | {entry['failed']} | "
            f"{_percent(entry['wer'])} | {_percent(entry['parity'])} | {_times(entry['speedup'])} | {median} | "
            f"{_percent(entry['acceptance_rate'])} | {_number(per_pass)} | "
            f"{_number(entry['rtf'], 3)} |")


def beam_size(report: dict) -> int | None:
    """The run's beam size (eval.run --beam-size, carried in the recipe), None for greedy decoding."""
    recipe = report.get("settings", {}).get("recipe") or "{}"
    return json.loads(recipe).get("beam_size")


def markdown(report: dict) -> str:
    dataset, machine, summary = report["dataset"], report["machine"], report["summary"]
    beams = beam_size(report)
    plain = f"plain beam search ({beams} beams)" if beams else "plain greedy"
    where = "/".join(part for part in (dataset.get("config"), dataset.get("split")) if part)
    gpus = f", GPU {', '.join(machine['gpus'])}" if machine.get("gpus") else ""
    lines = [
        f"# asr-specdec eval: {dataset['dataset']}{f' ({where})' if where else ''}",
        "",
        f"{summary[0]['utterances'] + summary[0]['failed']} utterances, {summary[0]['audio_seconds']:.1f} s of "
        f"audio; engine {report['engine']}; {report['created']}.",
        "",
        f"- command: `{report['command']}`",
        f"- decoding: {f'beam search, {beams} beams, every mode' if beams else 'greedy'}; parity and speedup "
        f"against {plain}",
        f"- machine: {machine['cpu']}, {machine['cpu_count']} CPUs, {machine['torch_threads']} torch threads "
        f"per worker{gpus}; {machine['platform']}",
        "- libraries: " + ", ".join(f"{name} {version}" for name, version in report["libraries"].items()),
        *(line for role, model in report["models"].items() for line in _model_line(role, model)),
        "",
        "| mode | draft tokens | utterances | failed | WER | identical to plain | speedup (total) | "
        f"speedup per utterance: median [p25–p75] | acceptance | {'beam steps' if beams else 'tokens'} / main pass | "
        "RTF |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(_table_row(entry, bool(beams)) for entry in summary),
        "",
        f"Speedup (total) is the summed {plain} time over the summed time of the mode, on the utterances "
        "both decoded; RTF is decoding time over audio duration (lower is faster). WER uses transformers' "
        "Whisper English normaliser and counts only utterances with a reference. Every utterance was decoded "
        "by every mode back to back, after a warm-up.",
    ]
    lines += [f"\nNote: {note}" for note in report.get("notes", [])]
    if report["failed"]:
        lines += ["", "Failed utterances:"]
        lines += [f"- `{utterance}`: {error}" for utterance, error in report["failed"].items()]
    return "\n".join(lines) + "\n"


def write_report(folder: Path, rows: list[dict], labels: list[str], context: dict) -> dict:
    report = build_report(rows, labels, context)
    (folder / JSON_FILE).write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (folder / MARKDOWN_FILE).write_text(markdown(report), encoding="utf-8")
    write_plot(report["summary"], report["rows"], folder / PLOT_FILE)
    return report
