"""Errors a user can act on. Their message is one line, printed by the CLI without a traceback."""


class SpecdecError(Exception):
    """Base class for every error the CLI and the web app show to the user as one line."""


class AudioError(SpecdecError):
    """The audio could not be read or is unusable (missing, empty, corrupt, not audio)."""


class ModelError(SpecdecError):
    """A model could not be found, loaded, verified or paired."""


class OptionError(SpecdecError, ValueError):
    """An option out of range, refused where the options object is built. `template` names options as `{name}`
    (their Python keywords); each front end says it in its own words (`in_words`: a flag on the command line, a
    form field on the server), in one place at its edge. `option` is the one refused."""

    def __init__(self, option: str, template: str):
        self.option, self.template = option, template
        super().__init__(self.in_words(keyword))

    def in_words(self, word) -> str:
        import string

        names = {field for _, field, _, _ in string.Formatter().parse(self.template) if field}
        return self.template.format(**{name: word(name) for name in names})


def keyword(name: str) -> str:
    """An option in Python's words: its keyword (`name=value`: name="value")."""
    key, _, value = name.partition("=")
    return f'{key}="{value}"' if value else key
