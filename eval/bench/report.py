"""The duel's outputs: one Markdown table (plus notes), and a PNG of throughput against batch size."""

from __future__ import annotations

from pathlib import Path

COLUMNS = ("system", "batch", "wall s", "latency/utt s", "throughput (audio s/s)", "speedup vs ours plain, same B",
           "speedup vs ours plain B=1", "acceptance", "tokens/main pass", "tokens == ours plain B=1",
           "peak RSS MiB")


def markdown_table(rows: list[dict]) -> list[str]:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        if row["status"] != "ok":
            cells = [row["label"], str(row["batch_size"]), f"{row['status']}: {row['reason']}"]
            cells += [""] * (len(COLUMNS) - len(cells))
        else:
            cells = [row["label"], str(row["batch_size"]), _number(row["wall_seconds"]),
                     _number(row["latency_seconds"], 3), _number(row["throughput"]),
                     _ratio(row["speedup_same_batch"]), _ratio(row["speedup_vs_batch_1"]),
                     _percent(row["acceptance_rate"]), _number(row["tokens_per_main_pass"]),
                     parity_cell(row["mismatched_utterances"], row["utterances"]), _memory(row)]
        lines.append("| " + " | ".join(_escape(cell) for cell in cells) + " |")
    return lines


def parity_cell(mismatched: list[int], utterances: int) -> str:
    return "yes" if not mismatched else f"no ({len(mismatched)}/{utterances})"


def _memory(row: dict) -> str:
    if row.get("peak_rss_mib") is not None:
        return f"{row['peak_rss_mib']:.0f}"
    return row.get("memory_reason") or ""


def _number(value, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _ratio(value) -> str:
    return "" if value is None else f"{value:.2f}x"


def _percent(value) -> str:
    return "" if value is None else f"{value:.0%}"


def _escape(cell: str) -> str:
    return cell.replace("|", "/").replace("\n", " ")


def write_plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display on a server
    from matplotlib import pyplot

    figure, axis = pyplot.subplots(figsize=(8, 5), constrained_layout=True)
    batch_sizes = sorted({row["batch_size"] for row in rows})
    for label in dict.fromkeys(row["label"] for row in rows):
        points = [(row["batch_size"], row["throughput"]) for row in rows
                  if row["label"] == label and row["status"] == "ok"]
        if points:
            axis.plot([size for size, _ in points], [value for _, value in points], marker="o", label=label)
    if len(batch_sizes) > 1:
        axis.set_xscale("log", base=2)
    axis.set_xticks(batch_sizes, [str(size) for size in batch_sizes])
    axis.set_xlabel("batch size")
    axis.set_ylabel("audio seconds per wall second")
    axis.set_title("throughput against batch size")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
