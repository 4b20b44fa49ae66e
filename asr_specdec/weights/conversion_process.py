"""A CTranslate2 folder's conversion (ct2.py `convert_ct2_whisper`) in a Python process of its own.

Why: the conversion writes and checks a transformers directory with transformers' own classes (tokenizer, feature
extractor, configs, the model on the meta device). Their import stays in a process for good: ~170 MB resident and
seconds (measured with the processor class it also imported then), a third of what small's whole loaded model holds
after a call, though nothing loaded from the directory needs transformers again (lean_model.py, lean_processor.py). A
process that converts on its first load (a server, a notebook) would hold it for its life. The child is started with
`python -m` (never multiprocessing's spawn, which re-runs a user's script that has no `__main__` guard) and passes a
ModelError back as its one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ..errors import ModelError

MODEL_ERROR_EXIT = 3


def convert_in_own_process(ct2_dir: Path, out_dir: Path, in_place_sha256: str | None = None,
                           own_process: bool | None = None) -> None:
    """`convert_ct2_whisper(ct2_dir, out_dir, in_place_sha256)`, in a child process unless `own_process` is False;
    None: in a child unless transformers is already imported here (nothing to save) or there is no interpreter
    to start (none named, or a frozen application's, which would start the application again)."""
    if own_process is None:
        own_process = "transformers" not in sys.modules and bool(sys.executable) and not getattr(sys, "frozen", False)
    if not own_process:
        from .ct2 import convert_ct2_whisper

        convert_ct2_whisper(ct2_dir, out_dir, in_place_sha256)
        return
    package_parent = str(Path(__file__).resolve().parents[2])  # the child imports this copy of the package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_parent, os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-m", __name__, str(ct2_dir), str(out_dir), in_place_sha256 or ""]
    done = subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode == MODEL_ERROR_EXIT:
        raise ModelError((done.stderr.strip().splitlines() or [f"converting {ct2_dir} failed"])[-1])
    if done.returncode < 0:
        raise ModelError(f"converting {ct2_dir}: the conversion process was killed (signal {-done.returncode}"
                         f"{', out of memory?' if -done.returncode == 9 else ''})")
    if done.returncode:
        raise RuntimeError(f"converting {ct2_dir} failed in its own process:\n{done.stderr[-3000:]}")


def main(argv: list[str]) -> int:
    from .ct2 import convert_ct2_whisper

    ct2_dir, out_dir, in_place_sha256 = argv
    try:
        convert_ct2_whisper(ct2_dir, out_dir, in_place_sha256 or None)
    except ModelError as error:
        print(" ".join(str(error).split()), file=sys.stderr)
        return MODEL_ERROR_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
