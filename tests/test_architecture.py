"""The package layout of docs/architecture.md, kept: no import cycles, and each room imports only the rooms it may
(core and weights nothing of the adapters, the two adapters nothing of each other)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "asr_specdec"
COMMANDS = ("transcribe", "serve", "generate", "convert")  # in cli/; `python -m asr_specdec.NAME` runs each
ENTRY_POINTS = set(COMMANDS)  # the two-line modules at the package root that run them
NO_CYCLES = PACKAGE.parents[1] / "shared" / "tools" / "no-cycles.py"
# room -> rooms of asr_specdec it must not import
FORBIDDEN = {
    "core": {"whisper", "text", "weights", "compat", "server", "cli", *ENTRY_POINTS},
    "weights": {"core", "whisper", "text", "compat", "server", "cli", *ENTRY_POINTS},
    "whisper": {"text", "compat", "server", "cli", *ENTRY_POINTS},
    "text": {"whisper", "compat", "server", "cli", *ENTRY_POINTS},
    # faster-whisper's API maps onto the Whisper adapter; nothing of the command lines or the server
    "compat": {"text", "server", "cli", *ENTRY_POINTS},
    # the server is a front end like the command lines: they may start it, it knows nothing of them
    "server": {"compat", "cli", *ENTRY_POINTS},
}


def imported_names(path: Path) -> list[list[str]]:
    """The dotted names the file at `path` imports, split into parts (relative imports resolved)."""
    package = path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1]
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = [*base, *(node.module.split(".") if node.module else [])]
                names += [target] if node.module else [[*target, alias.name] for alias in node.names]
            else:
                names.append((node.module or "").split("."))
        elif isinstance(node, ast.Import):
            names += [alias.name.split(".") for alias in node.names]
    return names


def imported_rooms(path: Path) -> set[str]:
    """The top-level modules of asr_specdec that the file at `path` imports."""
    return {name[1] for name in imported_names(path) if len(name) > 1 and name[0] == "asr_specdec"}


@pytest.mark.parametrize("room", sorted(FORBIDDEN))
def test_each_room_imports_only_what_it_may(room):
    offending = {f"{path.relative_to(PACKAGE.parent)} imports asr_specdec.{imported}"
                 for path in (PACKAGE / room).rglob("*.py")
                 for imported in imported_rooms(path) & FORBIDDEN[room]}
    assert not offending, sorted(offending)


def test_the_rule_checker_sees_a_forbidden_import(tmp_path, monkeypatch):
    fake = tmp_path / "asr_specdec" / "core"
    fake.mkdir(parents=True)
    (fake / "leak.py").write_text("from ..whisper.decoder import KVCache\nfrom . import engine\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "asr_specdec")
    assert imported_rooms(fake / "leak.py") == {"whisper", "core"}


@pytest.mark.skipif(not NO_CYCLES.is_file(), reason="the team's shared tools are not beside this checkout")
def test_no_import_cycles():
    result = subprocess.run([sys.executable, str(NO_CYCLES), str(PACKAGE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("modules") and result.stdout.startswith("0 cycles, 0 core->adapter")


def test_no_command_imports_another():
    """What two command lines share lives in a module of cli/ that is not a command (commands.py,
    transcriber_arguments.py, recipe_arguments.py)."""
    def commands_imported_by(path: Path) -> set[str]:
        return {name[2] for name in imported_names(path) if name[:2] == ["asr_specdec", "cli"] and len(name) > 2}

    offending = {f"cli/{name}.py imports cli/{other}.py" for name in COMMANDS
                 for other in commands_imported_by(PACKAGE / "cli" / f"{name}.py") & (set(COMMANDS) - {name})}
    assert not offending, sorted(offending)


def test_the_package_root_holds_the_api_errors_and_entry_points_only():
    loose = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__", "errors"}
    assert loose == ENTRY_POINTS
    for name in ENTRY_POINTS:  # each only runs its command
        assert imported_names(PACKAGE / f"{name}.py") == [["sys"], ["asr_specdec", "cli", name]]


# the Whisper adapter's rooms, lowest first: a room imports only rooms below it (data flows one way: a window's
# runtime knows nothing of the recipe that judges it, the recipe nothing of the long-form loops that call it)
WHISPER_ROOMS = {"io": 0, "runtime": 1, "drafters": 2, "recipe": 2, "longform": 3, "live": 4, "speakers": 4}


def imported_whisper_rooms(path: Path) -> set[str]:
    """The sub-folders of asr_specdec/whisper/ that the file at `path` imports."""
    return {name[2] for name in imported_names(path)
            if len(name) > 2 and name[:2] == ["asr_specdec", "whisper"]} & set(WHISPER_ROOMS)


def whisper_room_violations(package: Path) -> set[str]:
    return {f"{path.relative_to(package.parent)} imports whisper.{imported}"
            for room, rank in WHISPER_ROOMS.items()
            for path in (package / "whisper" / room).rglob("*.py")
            for imported in imported_whisper_rooms(path)
            if imported != room and WHISPER_ROOMS[imported] >= rank}


def test_whisper_rooms_import_downward_only():
    offending = whisper_room_violations(PACKAGE)
    assert not offending, sorted(offending)


def test_the_room_checker_sees_an_upward_import(tmp_path, monkeypatch):
    runtime = tmp_path / "asr_specdec" / "whisper" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "pipeline.py").write_text("from ..recipe.window_extras import window_extras\nfrom ..io import audio\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "asr_specdec")
    assert whisper_room_violations(tmp_path / "asr_specdec") == {
        "asr_specdec/whisper/runtime/pipeline.py imports whisper.recipe"}
