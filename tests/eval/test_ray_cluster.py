"""Joining a real Ray head by address, on loopback only: a head started with `ray start --head` on a machine that has a
Ray token (so Ray turns token authentication on), joined by `eval.run` and `eval.transcribe_dataset` as a new user
runs them, gives the rows of a run without Ray; a missing or wrong token and another Ray version each give one line.

Every Ray command runs in its own process with its own HOME (its own ~/.ray/auth_token), as a user's would: Ray's
authentication mode and loopback setting are read once per process. Nothing listens on or connects to any interface
but loopback: the head is started the way Ray keeps a node on 127.0.0.1 (RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0), the
drivers are given 127.0.0.1 and nothing else.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from eval.run import main

# one Ray at a time: with pytest-xdist, the Ray tests run in one worker (--dist loadgroup)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]
PROJECT = Path(__file__).resolve().parents[2]
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
FAST = ["--main", "tiny.en", "--limit", "2", "--num-workers", "1", "--engine", "ray"]


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def clean_env(home: Path, cache: Path, **extra: str) -> dict:
    """This environment less anything that would steer Ray (a token, its mode, an address), with its own HOME."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("RAY_")}
    return {**env, "HOME": str(home), "ASR_SPECDEC_CACHE": str(cache), **extra}


def run(arguments: list[str], env: dict, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *arguments], cwd=PROJECT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def listening_addresses(root: int) -> set[str]:
    import psutil

    processes = [psutil.Process(root), *psutil.Process(root).children(recursive=True)]
    pids = {process.pid for process in processes}
    return {connection.laddr.ip for connection in psutil.net_connections("inet")
            if connection.pid in pids and connection.status == psutil.CONN_LISTEN}


@pytest.fixture(scope="module")
def head(tmp_path_factory, tiny_en_dir, pack_cache):
    """A Ray head on 127.0.0.1, in its own process group (stopped by signal: `ray stop` would stop every Ray here)."""
    pytest.importorskip("ray")
    if shutil.which("ray") is None:
        pytest.skip("the `ray` command is not on PATH")
    home = tmp_path_factory.mktemp("head-home")
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text(uuid.uuid4().hex)  # as any earlier `ray.init()` leaves one
    port = free_port()
    log = open(home / "head.log", "w")
    # its own temp dir (short: Ray's socket paths live there): a head stopped by signal leaves its address file
    # behind, which a later plain ray.init() on this machine would try to join
    temp_dir = tempfile.mkdtemp(prefix="ray-head-")
    process = subprocess.Popen(
        ["ray", "start", "--head", "--port", str(port), "--node-ip-address", "127.0.0.1", "--num-cpus", "2",
         "--include-dashboard=false", "--disable-usage-stats", "--temp-dir", temp_dir, "--block"],
        # workers at normal priority (Ray renices them to 15): beside the suite's other worker they would crawl
        env=clean_env(home, pack_cache, **LOOPBACK, RAY_worker_niceness="0"), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "Ray runtime started" not in (home / "head.log").read_text():
            assert process.poll() is None and time.monotonic() < deadline, (home / "head.log").read_text()
            time.sleep(0.5)
        yield {"address": f"127.0.0.1:{port}", "home": home, "pid": process.pid,
               "log": (home / "head.log").read_text()}
    finally:
        # `ray start --block` outlives SIGTERM by more than 30 s; a test head need not stop gracefully (its temp dir
        # goes below, and nothing else of it is kept)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def rows(folder: Path) -> dict:
    found = [json.loads(line) for line in (folder / "rows.jsonl").read_text().splitlines()]
    assert found and all(row["status"] == "ok" for row in found), found
    return {(row["id"], row["mode"]): (row["text"], row["tokens"]) for row in found}


def test_eval_and_transcribe_dataset_join_a_token_head_by_address(head, pack_cache, shared_audio, tmp_path):
    assert "Token authentication is enabled" in head["log"]  # Ray's default where a token exists: the case
    assert listening_addresses(head["pid"]) and all(
        ipaddress.ip_address(address.removeprefix("::ffff:")).is_loopback
        for address in listening_addresses(head["pid"]))
    dataset = str(shared_audio / "manifest.jsonl")
    # the driver's own HOME has the head's token, and no RAY_* variable: as a user on the head's machine
    user_home = tmp_path / "user"
    (user_home / ".ray").mkdir(parents=True)
    shutil.copy(head["home"] / ".ray" / "auth_token", user_home / ".ray" / "auth_token")
    user = clean_env(user_home, pack_cache)
    joined = run(["-m", "eval.run", *FAST, "--modes", "off", "--dataset", dataset, "--address", head["address"],
                  "--output", str(tmp_path / "joined")], user)
    assert joined.returncode == 0, joined.stderr[-3000:]
    listed = run(["-m", "eval.transcribe_dataset", *FAST, "--mode", "off", "--dataset", dataset,
                  "--address", head["address"], "--output", str(tmp_path / "listed")], user)
    assert listed.returncode == 0, listed.stderr[-3000:]
    # the same utterances in this process without Ray (tests/eval/test_ray.py shows an embedded Ray gives these rows)
    assert main(["--main", "tiny.en", "--limit", "2", "--modes", "off", "--threads", "1", "--dataset", dataset,
                 "--output", str(tmp_path / "local")]) == 0
    assert len(rows(tmp_path / "local")) == 2
    assert rows(tmp_path / "joined") == rows(tmp_path / "local") == rows(tmp_path / "listed")
    assert json.loads((tmp_path / "joined" / "report.json").read_text())["engine"] == "ray"


def one_line_error(process: subprocess.CompletedProcess) -> str:
    assert process.returncode == 2, process.stderr[-3000:]
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in process.stderr, process.stderr[-3000:]
    return lines[0]


def join_error(head, pack_cache, shared_audio, tmp_path, code: str = "pass", **env: str) -> str:
    """The eval's stderr joining the head from a HOME without the head's token, `code` run first in the driver."""
    arguments = [*FAST, "--modes", "off", "--dataset", str(shared_audio / "manifest.jsonl"),
                 "--address", head["address"], "--output", str(tmp_path / "out")]
    program = f"import sys; {code}; from eval.run import main; sys.exit(main({arguments!r}))"
    return one_line_error(run(["-c", program], clean_env(tmp_path / "stranger", pack_cache, **env), timeout=90))


def test_no_token_a_wrong_token_and_no_token_file_each_say_so(head, pack_cache, shared_audio, tmp_path):
    address = head["address"]
    none = join_error(head, pack_cache, shared_audio, tmp_path)
    assert none.startswith(f"error: the Ray head at {address} requires a token") and "RAY_AUTH_MODE=token" in none
    wrong = join_error(head, pack_cache, shared_audio, tmp_path, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="not-it")
    assert wrong.startswith(f"error: the Ray head at {address} refused this process's token")
    missing = join_error(head, pack_cache, shared_audio, tmp_path, RAY_AUTH_MODE="token")
    assert missing.startswith("error: RAY_AUTH_MODE=token but this machine has no Ray token")
    assert not (tmp_path / "out").exists()


def test_another_ray_version_says_which(head, pack_cache, shared_audio, tmp_path):
    token = (head["home"] / ".ray" / "auth_token").read_text()
    error = join_error(head, pack_cache, shared_audio, tmp_path, "import ray; ray.__version__ = '0.0.1'",
                       RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    assert error.startswith(f"error: the Ray head at {head['address']} runs Ray ") and "this process Ray 0.0.1" in error
