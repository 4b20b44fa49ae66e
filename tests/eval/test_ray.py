"""The Ray engine, embedded with 2 workers: the same rows as the single-process eval, a corrupt file and a
killed worker each give a failed row while the job goes on, and without Ray the command says how to get it."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from eval.evaluator import UtteranceEvaluator
from eval.run import main

# one Ray at a time: with pytest-xdist, the Ray tests run in one worker (--dist loadgroup)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]
PROJECT = Path(__file__).resolve().parents[2]
FAST = ["--main", "tiny.en", "--modes", "off"]


class KillingEvaluator(UtteranceEvaluator):
    """Kills its own worker process, as the OOM killer would, when it meets the utterance 'kill-me'."""

    def evaluate(self, utterance):
        if utterance.id == "kill-me":
            os.kill(os.getpid(), signal.SIGKILL)
        return super().evaluate(utterance)


@pytest.fixture(scope="module")
def ray_session(pack_cache):
    """One embedded Ray for the module (starting Ray costs ~10 s on 2 cores); the engine joins it."""
    ray = pytest.importorskip("ray")
    from eval.ray_runner import start_embedded

    start_embedded(ray, num_cpus=2, num_gpus=0,
                   env_vars={"PYTHONPATH": str(PROJECT), "ASR_SPECDEC_CACHE": str(pack_cache)})
    yield ray
    ray.shutdown()


def test_the_embedded_workers_run_at_the_drivers_priority(ray_session):
    @ray_session.remote
    def niceness() -> int:
        return os.nice(0)

    assert ray_session.get(niceness.remote()) == os.nice(0)


def rows_by_key(folder: Path) -> dict:
    rows = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines()]
    return {(row["id"], row["variant"]): (row["status"], row["text"], row["tokens"]) for row in rows}


def test_ray_gives_the_single_process_rows(ray_session, capsys, tmp_path, shared_audio, manifest):
    manifest_path = shared_audio / "manifest.jsonl"
    some = ["--limit", "2"]  # one per worker
    assert main([*FAST, *some, "--dataset", str(manifest_path), "--output", str(tmp_path / "local"),
                 "--threads", "1"]) == 0
    code = main([*FAST, *some, "--dataset", str(manifest_path), "--output", str(tmp_path / "ray"), "--engine", "ray",
                 "--num-workers", "2", "--cpus-per-worker", "1"])
    assert code == 0, capsys.readouterr().err
    local, distributed = rows_by_key(tmp_path / "local"), rows_by_key(tmp_path / "ray")
    assert len(local) == 2 < len(manifest) and distributed == local
    report = json.loads((tmp_path / "ray" / "report.json").read_text())
    assert report["engine"] == "ray" and report["engine_options"]["num_workers"] == 2
    assert (tmp_path / "ray" / "report.md").is_file() and (tmp_path / "ray" / "report.png").is_file()
    assert ray_session.is_initialized()  # the engine leaves a session it did not start running


def test_a_corrupt_file_and_a_killed_worker_give_failed_rows(ray_session, capsys, tmp_path, shared_audio):
    from eval.job import EngineOptions, JobOptions, run_eval
    from eval.ray_runner import RayEngine
    from eval.settings import EvalSettings
    from eval.sources import load_utterances

    (tmp_path / "corrupt.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(40))
    entries = [{"audio": str(shared_audio / "LJ002-0020.wav"), "reference": "IN EIGHTEEN THIRTEEN"},
               {"audio": "corrupt.wav", "reference": None},
               {"id": "kill-me", "audio": str(shared_audio / "LJ002-0035.wav"), "reference": None},
               {"audio": str(shared_audio / "goforward.wav"), "reference": "GO FORWARD TEN METERS"}]
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    settings = EvalSettings(str(manifest), modes=("off",), main="tiny.en", threads=1, warmup=False)
    options = EngineOptions("ray", num_workers=2, cpus_per_worker=1, batch_size=1)
    job = JobOptions(tmp_path / "out", engine=options)
    code = run_eval(settings, load_utterances(str(manifest)), job, models={}, notes=[],
                    engine=RayEngine(settings, options, evaluator_class=KillingEvaluator))
    assert code == 1, capsys.readouterr().err
    rows = {row["id"]: row for row in map(json.loads, (tmp_path / "out" / "rows.jsonl").read_text().splitlines())}
    assert len(rows) == 4
    assert rows[str(shared_audio / "LJ002-0020.wav")]["text"] == " in 1813."
    assert rows[str(shared_audio / "goforward.wav")]["status"] == "ok"
    assert rows["corrupt.wav"]["status"] == "failed" and "corrupt.wav" in rows["corrupt.wav"]["error"]
    assert rows["kill-me"]["status"] == "failed" and "died" in rows["kill-me"]["error"]


def test_without_ray_the_command_says_how_to_install_it(capsys, monkeypatch, shared_audio, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    code = main([*FAST, "--dataset", str(shared_audio), "--engine", "ray", "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.strip() == "error: the Ray engine needs Ray: pip install 'asr-specdec[ray]' (or pip " \
                                        "install 'ray[data]')"
    assert not (tmp_path / "out").exists()
