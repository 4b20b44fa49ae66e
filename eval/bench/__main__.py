"""`python -m eval.bench`: the benchmarks, each with its command and what it measures."""

import importlib

# harness is every benchmark's timing loop, flags and models; memory, report and systems are the duel's parts
BENCHMARKS = ("speed", "drafters", "draft_schedules", "duel", "longform", "recipe", "streaming", "text", "server",
              "readme_tables", "gpu", "faithful", "torchpath", "dropin", "speakers", "silence", "seams",
              "sizes", "shared_cpu")

if __name__ == "__main__":
    for name in BENCHMARKS:
        summary = importlib.import_module(f"eval.bench.{name}").__doc__.split("\n\n")[0]
        print(f"python -m eval.bench.{name}\n    {' '.join(summary.split())}\n")
