"""One run from prepared settings: rows through an engine into the store, kept whatever happens (Ctrl-C,
a data source failing part-way); then the eval's report, or the transcription's Parquet file."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from asr_specdec.errors import SpecdecError

from .environment import library_versions, machine
from .local_engine import LocalEngine, pending
from .report import MARKDOWN_FILE, write_report
from .rows import OK
from .settings import EvalSettings
from .sources import Utterance, describe_dataset
from .store import RowStore

INTERRUPTED = 130


@dataclass(frozen=True)
class EngineOptions:
    name: str = "local"  # or "ray"
    num_workers: int = 2
    cpus_per_worker: float = 1
    gpus_per_worker: float = 0
    batch_size: int = 1
    address: str | None = None


@dataclass(frozen=True)
class JobOptions:
    output: Path
    limit: int | None = None
    resume: bool = False
    retry_failed: bool = False
    overwrite: bool = False
    engine: EngineOptions = EngineOptions()
    command: str = "python -m eval.run"


def make_engine(settings: EvalSettings, options: EngineOptions):
    if options.name == "ray":
        from .ray_runner import RayEngine

        return RayEngine(settings, options)
    return LocalEngine(settings)


def run_rows(settings: EvalSettings, utterances: Iterable[Utterance], job: JobOptions, label: str = "eval",
             engine=None) -> tuple[int, RowStore]:
    """(exit code, store): 0 all rows written, 2 the run stopped on an error, 130 interrupted."""
    from tqdm import tqdm

    store = RowStore(job.output)
    store.check(settings.identity(), job.resume, job.overwrite)
    engine = engine or make_engine(settings, job.engine)
    engine.start()  # models load (or Ray starts) before any output is written or a progress bar drawn
    try:
        store.start(settings.identity(), len(settings.variants()), job.resume, job.overwrite, job.retry_failed)
    except BaseException:
        engine.stop()
        raise
    done = store.done_ids()
    todo = pending(utterances, job.limit, done)
    if isinstance(utterances, list):
        todo = list(todo)
    total = len(todo) if isinstance(todo, list) else (max(0, job.limit - len(done)) if job.limit else None)
    failed = 0
    progress = tqdm(total=total, unit="utt", desc=label, file=sys.stderr, dynamic_ncols=True)

    def on_rows(rows: list[dict]) -> None:
        nonlocal failed
        failed += any(row["status"] != OK for row in rows)
        progress.update(1)
        progress.set_postfix(failed=failed)

    code = 0
    try:
        engine.run(todo, store, on_rows)
    except KeyboardInterrupt:
        code = INTERRUPTED
    except SpecdecError as error:
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        code = 2
    finally:
        progress.close()
        engine.stop()
    if code == INTERRUPTED:
        print(f"interrupted: {len(store.done_ids())} utterances kept in {store.path}; run again with --resume "
              "to continue", file=sys.stderr)
    return code, store


def report_context(settings: EvalSettings, job: JobOptions, models: dict, notes: list[str]) -> dict:
    described = machine()
    if settings.threads:
        described["torch_threads"] = settings.threads
    engine = asdict(job.engine) if job.engine.name == "ray" else {"name": job.engine.name}
    return {"command": job.command, "engine": job.engine.name, "engine_options": engine,
            "dataset": describe_dataset(settings.dataset, settings.config, settings.split),
            "settings": settings.as_dict(), "machine": described, "libraries": library_versions(),
            "models": models, "notes": notes}


def run_eval(settings: EvalSettings, utterances: Iterable[Utterance], job: JobOptions, models: dict,
             notes: list[str], engine=None) -> int:
    """Exit code: 0 all decoded, 1 some utterances failed, 2 the run stopped on an error, 130 interrupted."""
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    code, store = run_rows(settings, utterances, job, engine=engine)
    rows = store.rows()
    if not rows:
        print("no utterance finished: no report written", file=sys.stderr)
        return code or 2
    labels = [variant.label for variant in settings.variants()]
    report = write_report(job.output, rows, labels, report_context(settings, job, models, notes))
    print((job.output / MARKDOWN_FILE).read_text(encoding="utf-8"))
    if report["failed"]:
        print(f"{len(report['failed'])} utterances failed (marked in the report)", file=sys.stderr)
    print(f"report: {job.output}/report.{{json,md,png}}", file=sys.stderr)
    return code or (1 if report["failed"] else 0)
