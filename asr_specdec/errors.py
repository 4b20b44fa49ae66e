"""Errors a user can act on. Their message is one line, printed by the CLI without a traceback."""


class SpecdecError(Exception):
    """Base class for every error the CLI and the web app show to the user as one line."""


class AudioError(SpecdecError):
    """The audio could not be read or is unusable (missing, empty, corrupt, not audio)."""


class ModelError(SpecdecError):
    """A model could not be found, loaded, verified or paired."""
