"""The Ray engine: Ray Data maps the utterances in batches through an actor pool; each actor loads the
models once (an UtteranceEvaluator) and returns the same rows as the single-process engine.

Without an address (and no RAY_ADDRESS) Ray starts embedded on this machine; with one it joins that
cluster, shipping this package's code to the workers (torch, transformers etc. must be installed there).
A worker that dies is restarted, and its batch tried once more; if that fails too, the batch's
utterances get failed rows and the job goes on.
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from asr_specdec.native.threads import usable_cpus

from .errors import EvalError
from .evaluator import UtteranceEvaluator
from .paths import PROJECT_ROOT
from .ray_join import join
from .rows import failed_row, score_utterance
from .settings import EvalSettings
from .sources import Utterance
from .store import RowStore

INSTALL_HINT = "the Ray engine needs Ray: pip install 'asr-specdec[ray]' (or pip install 'ray[data]')"
RETRIES_AFTER_WORKER_DEATH = 1  # a second death on the same batch is taken as the batch's fault


def import_ray():
    try:
        import ray
        import ray.data
    except ImportError:
        raise EvalError(INSTALL_HINT) from None
    return ray


def start_embedded(ray, num_cpus: int, num_gpus: int, env_vars: dict[str, str]) -> None:
    """A Ray of its own on this machine ("local": plain init would join a head `ray start` runs here). Its workers
    decode at the driver's priority: Ray's default renices them to 15, and beside any other job on the machine they
    then get a few percent of a core (an eval of 2 clips beside a 2-process job: 280 s instead of 33)."""
    ray.init(address="local", num_cpus=num_cpus, num_gpus=num_gpus, include_dashboard=False,
             logging_level=logging.ERROR, log_to_driver=False, runtime_env={"env_vars": env_vars},
             _system_config={"worker_niceness": 0})


class EvaluatorActor:
    """One Ray actor: models loaded once in __init__, then batches of utterance records in, rows out."""

    def __init__(self, settings: EvalSettings, evaluator_class: type = UtteranceEvaluator):
        self.evaluator = evaluator_class(settings)

    def __call__(self, batch: dict) -> dict:
        rows = []
        for record, audio in zip(batch["record"], batch["audio"]):
            fields = json.loads(record)
            utterance = Utterance(fields["id"], fields["path"] or bytes(audio), fields["reference"])
            rows += self.evaluator.evaluate(utterance)
        # rows travel as JSON text: their nested, sometimes-null fields would give each block its own schema
        return {"row": [json.dumps(row, ensure_ascii=False) for row in rows]}


def to_item(utterance: Utterance, ship_audio: bool) -> dict:
    """A Ray Data row; a path is replaced by the file's bytes when the workers may be on other machines."""
    audio = utterance.audio
    if ship_audio and isinstance(audio, str):
        audio = Path(audio).read_bytes() if Path(audio).is_file() else b""
    path = audio if isinstance(audio, str) else None
    record = {"id": utterance.id, "reference": utterance.reference, "path": path}
    return {"record": json.dumps(record, ensure_ascii=False), "audio": b"" if path else bytes(audio)}


class RayEngine:
    def __init__(self, settings: EvalSettings, options, evaluator_class: type = UtteranceEvaluator):
        self.settings, self.options, self.evaluator_class = settings, options, evaluator_class
        self.address = options.address or os.environ.get("RAY_ADDRESS") or None
        self.ray = None
        self.started_ray = False

    def start(self) -> None:
        ray = import_ray()
        if not ray.is_initialized():  # else a session the caller started, which it also ends
            self._init(ray)
            self.started_ray = True
        self.ray = ray
        self._check_resources()
        context = ray.data.DataContext.get_current()
        context.max_errored_blocks = -1  # a batch whose worker died twice becomes failed rows, not an abort
        context.enable_progress_bars = False  # the eval draws its own
        logging.getLogger("ray.data").setLevel(logging.CRITICAL)

    def _init(self, ray) -> None:
        import asr_specdec
        import eval as eval_package

        if self.address:
            join(ray, self.address, runtime_env={"py_modules": [asr_specdec, eval_package]},
                 logging_level=logging.ERROR, log_to_driver=False)
            return
        path = os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))
        start_embedded(ray, num_cpus=usable_cpus(), num_gpus=self._local_gpus(), env_vars={"PYTHONPATH": path})

    def _local_gpus(self) -> int:
        import torch

        return torch.cuda.device_count()

    def _check_resources(self) -> None:
        """Refuse a pool that can never be placed: Ray would wait for it forever."""
        resources = self.ray.cluster_resources()
        wanted = {"CPU": self.options.num_workers * self.options.cpus_per_worker,
                  "GPU": self.options.num_workers * self.options.gpus_per_worker}
        for name, amount in wanted.items():
            if amount > resources.get(name, 0):
                raise EvalError(f"{self.options.num_workers} workers need {amount:g} {name}s but the Ray cluster has "
                                f"{resources.get(name, 0):g}: lower --num-workers or --{name.lower()}s-per-worker")

    def run(self, utterances: Iterable[Utterance], store: RowStore, on_rows: Callable[[list[dict]], None]) -> None:
        ray = self.ray
        wanted = {utterance.id: utterance for utterance in utterances}
        if not wanted:
            return
        items = [to_item(utterance, ship_audio=bool(self.address)) for utterance in wanted.values()]
        dataset = ray.data.from_items(items, override_num_blocks=max(1, len(items) // self.options.batch_size))
        # one batch at a time per actor: a batch queued behind one that kills its worker would die with it
        pool = ray.data.ActorPoolStrategy(size=self.options.num_workers, max_tasks_in_flight_per_actor=1)
        with warnings.catch_warnings():
            # Ray Data takes the restart policy only through ray_remote_args, which it marks as deprecated
            warnings.simplefilter("ignore")
            results = dataset.map_batches(
                EvaluatorActor, fn_constructor_args=(self.settings, self.evaluator_class),
                batch_size=self.options.batch_size, compute=pool,
                num_cpus=self.options.cpus_per_worker, num_gpus=self.options.gpus_per_worker or None,
                max_restarts=-1, max_task_retries=RETRIES_AFTER_WORKER_DEATH)
        pending_rows: dict[str, list[dict]] = {}
        variant_count = len(self.settings.variants())
        try:
            for batch in results.iter_batches(batch_size=None, batch_format="numpy"):
                for text in batch["row"]:
                    row = json.loads(text)
                    pending_rows.setdefault(row["id"], []).append(row)
                    if len(pending_rows[row["id"]]) == variant_count:
                        finished = pending_rows.pop(row["id"])
                        store.append(finished)
                        on_rows(finished)
                        wanted.pop(row["id"], None)
        except KeyboardInterrupt:
            raise
        except Exception as error:
            raise EvalError(f"the Ray job failed: {' '.join(str(error).split())[:300]}") from None
        self._fail_lost(wanted, store, on_rows)

    def _fail_lost(self, lost: dict[str, Utterance], store: RowStore, on_rows) -> None:
        reason = f"the Ray worker decoding it died ({RETRIES_AFTER_WORKER_DEATH + 1} tries)"
        for utterance in lost.values():
            rows = score_utterance([failed_row(utterance.id, variant, utterance.reference, reason)
                                    for variant in self.settings.variants()])
            store.append(rows)
            on_rows(rows)

    def stop(self) -> None:
        if self.started_ray and self.ray.is_initialized():
            self.ray.shutdown()
        self.ray, self.started_ray = None, False
