"""Rows on disk as JSON lines, appended one utterance at a time and flushed, so that an interrupted run
keeps every finished utterance and `--resume` continues after them."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from .errors import EvalError

ROWS_FILE, SETTINGS_FILE = "rows.jsonl", "run.json"


class RowStore:
    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / ROWS_FILE
        self.settings_path = folder / SETTINGS_FILE

    def has_rows(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def check(self, identity: dict, resume: bool, overwrite: bool) -> None:
        """Refuse, before anything is loaded or written: results not asked to be replaced, or (resuming) a run
        that measured something else."""
        if not self.has_rows():
            return
        if resume:
            saved = json.loads(self.settings_path.read_text()) if self.settings_path.is_file() else {}
            if saved != identity:
                changed = sorted(key for key in identity if saved.get(key) != identity[key])
                raise EvalError(f"{self.folder} holds a run with other settings ({', '.join(changed)}): "
                                "resume with the same settings, or choose another --output")
        elif not overwrite:
            raise EvalError(f"{self.folder} already holds results: pass --resume to continue them or "
                            "--overwrite to start again")

    def start(self, identity: dict, variant_count: int, resume: bool, overwrite: bool,
              retry_failed: bool = False) -> None:
        """Prepare the folder: fresh, or (resuming) keeping the earlier rows; `retry_failed` drops the
        utterances that failed, so that they run again."""
        self.check(identity, resume, overwrite)
        self.folder.mkdir(parents=True, exist_ok=True)
        if resume and self.has_rows():
            self._keep_complete_utterances(variant_count, retry_failed)
            return
        self.path.write_text("")
        self.settings_path.write_text(json.dumps(identity, indent=2) + "\n")

    def _keep_complete_utterances(self, variant_count: int, retry_failed: bool) -> None:
        # a hard kill can cut the last write short: drop its broken line and any utterance missing rows
        rows = self.rows()
        counts = Counter(row["id"] for row in rows)
        failed = {row["id"] for row in rows if row["status"] != "ok"} if retry_failed else set()
        complete = [row for row in rows if counts[row["id"]] == variant_count and row["id"] not in failed]
        if len(complete) != len(rows) or not self.path.read_text(encoding="utf-8").endswith("\n"):
            self._rewrite(complete)

    def _rewrite(self, rows: list[dict]) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
        temporary.replace(self.path)

    def rows(self) -> list[dict]:
        """Every row that was written whole."""
        if not self.path.is_file():
            return []
        rows = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return rows

    def done_ids(self) -> set[str]:
        return {row["id"] for row in self.rows()}

    def append(self, rows: list[dict]) -> None:
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        with self.path.open("a", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
