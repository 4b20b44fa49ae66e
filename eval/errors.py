"""Errors the eval reports to the user as one line (and a non-zero exit), never as a traceback."""

from asr_specdec.errors import SpecdecError


class EvalError(SpecdecError):
    """Bad arguments, an unusable output folder, or a run that cannot start."""
