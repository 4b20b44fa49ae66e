"""The row store: rows survive an interrupted run, and --resume refuses a run that measured something else."""

from __future__ import annotations

import json

import pytest

from eval.errors import EvalError
from eval.store import RowStore

IDENTITY = {"dataset": "d", "modes": ["off", "prompt-lookup"]}


def rows_of(utterance_id, status="ok"):
    return [{"id": utterance_id, "variant": variant, "status": status} for variant in ("off", "prompt-lookup")]


def test_a_fresh_folder_refuses_to_be_overwritten_by_accident(tmp_path):
    store = RowStore(tmp_path)
    store.start(IDENTITY, 2, resume=False, overwrite=False)
    store.append(rows_of("a"))
    with pytest.raises(EvalError, match="--resume"):
        RowStore(tmp_path).start(IDENTITY, 2, resume=False, overwrite=False)
    RowStore(tmp_path).start(IDENTITY, 2, resume=False, overwrite=True)
    assert RowStore(tmp_path).rows() == []


def test_resume_keeps_whole_utterances_only(tmp_path):
    store = RowStore(tmp_path)
    store.start(IDENTITY, 2, resume=False, overwrite=False)
    store.append(rows_of("a"))
    store.append(rows_of("b", status="failed"))
    with store.path.open("a") as file:  # a hard kill mid-write: one row of "c" and half a line
        file.write(json.dumps(rows_of("c")[0]) + "\n" + '{"id": "c", "vari')
    resumed = RowStore(tmp_path)
    resumed.start(IDENTITY, 2, resume=True, overwrite=False)
    assert resumed.done_ids() == {"a", "b"}
    resumed.append(rows_of("c"))
    assert [row["id"] for row in resumed.rows()] == ["a", "a", "b", "b", "c", "c"]
    RowStore(tmp_path).start(IDENTITY, 2, resume=True, overwrite=False, retry_failed=True)
    assert RowStore(tmp_path).done_ids() == {"a", "c"}


def test_resume_refuses_other_settings(tmp_path):
    RowStore(tmp_path).start(IDENTITY, 2, resume=False, overwrite=False)
    RowStore(tmp_path).append(rows_of("a"))
    with pytest.raises(EvalError, match=r"other settings \(modes\)"):
        RowStore(tmp_path).start({**IDENTITY, "modes": ["off"]}, 1, resume=True, overwrite=False)
