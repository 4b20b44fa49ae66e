"""The PNG: speedup (total, and each utterance) and acceptance per mode; speedup against draft length when
several lengths were swept."""

from __future__ import annotations

from pathlib import Path


def write_plot(summary: list[dict], rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display needed, and none is there on a server
    from matplotlib import pyplot

    draft_lengths = sorted({entry["draft_tokens"] for entry in summary if entry["draft_tokens"]})
    panels = 3 if len(draft_lengths) > 1 else 2
    figure, axes = pyplot.subplots(1, panels, figsize=(5.5 * panels, 4.5), constrained_layout=True)
    labels = [entry["variant"] for entry in summary]
    positions = range(len(labels))

    speed = axes[0]
    speed.bar(positions, [entry["speedup"] or 0 for entry in summary], color="tab:blue", alpha=0.6, label="total")
    for position, label in zip(positions, labels):
        points = [row["speedup"] for row in rows if row["variant"] == label and row.get("speedup")]
        speed.scatter([position] * len(points), points, s=10, color="black", alpha=0.6,
                      label="per utterance" if position == 0 else None)
    speed.axhline(1.0, color="grey", linewidth=0.8)
    speed.set_title("speedup over plain greedy")
    speed.set_ylabel("plain time / mode time")
    speed.legend(loc="upper left", fontsize=8)

    acceptance = axes[1]
    acceptance.bar(positions, [(entry["acceptance_rate"] or 0) * 100 for entry in summary], color="tab:green")
    acceptance.set_title("draft tokens accepted")
    acceptance.set_ylabel("%")
    acceptance.set_ylim(0, 100)
    for axis in axes[:2]:
        axis.set_xticks(list(positions), labels, rotation=35, ha="right", fontsize=8)

    if panels == 3:
        sweep = axes[2]
        for mode in dict.fromkeys(entry["mode"] for entry in summary if entry["draft_tokens"]):
            points = sorted((entry["draft_tokens"], entry["speedup"]) for entry in summary
                            if entry["mode"] == mode and entry["speedup"] is not None)
            sweep.plot([k for k, _ in points], [s for _, s in points], marker="o", label=mode)
        sweep.axhline(1.0, color="grey", linewidth=0.8)
        sweep.set_xticks(draft_lengths)
        sweep.set_title("speedup against draft length")
        sweep.set_xlabel("draft tokens per round")
        sweep.legend(fontsize=8)
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
