"""Library errors in the page's own terms: the library speaks to command-line users (`--mode universal`), the
page has controls with labels."""

from __future__ import annotations

import re

# command-line flag -> the label of the control that sets the same thing on the page
CONTROLS = {
    "--main": "Main model",
    "--mode": "Drafter",
    "--assistant": "Assistant model",
    "--language": "Language",
    "--task": "Task",
    "--num-draft-tokens": "Draft tokens per round",
    "--dynamic": "Dynamic draft length",
    "--compute-type": "Compute type",
    "--word-timestamps": "Word timestamps",
    "--vad": "Skip silence (VAD)",
    "--initial-prompt": "Initial prompt",
    "--hotwords": "Hotwords",
    "--beam-size": "Beam search: beams",
    "--diarize": "Speakers",
    "--repetition-penalty": "Repetition penalty",
    "--no-repeat-ngram-size": "No repeat n-gram size",
}
_PIP = re.compile(r":? ?pip install ([\w.-]+)")
_MODE_FLAG = re.compile(r"(?:use )?--mode ([a-z-]+(?: or [a-z-]+)?)")
_MODE_NAME = re.compile(r"\bmode '([a-z-]+)'")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_KEYWORD = re.compile(r"\s*/\s*[a-z_]+=\)")  # "(--assistant / assistant_model=)": the Python spelling goes
# "repetition_penalty must be > 0": a range check opening with a Python keyword is named like the keyword's flag
_OPENING_KEYWORD = re.compile(r"^([a-z]+(?:_[a-z0-9]+)+)(?= must\b)")


def error_in_app_terms(error: Exception) -> str:
    """An error's line in the page's terms; an option refused by its options object (OptionError) is first named
    by its flag, which CONTROLS then maps to the control."""
    from asr_specdec.errors import OptionError

    if isinstance(error, OptionError):
        def flag(name: str) -> str:
            key, _, value = name.partition("=")
            return f"--{key.replace('_', '-')} {value}".strip()

        return in_app_terms(error.in_words(flag))
    return in_app_terms(str(error))


def in_app_terms(message: str) -> str:
    """`message` with command-line flags named by the page control that does the same."""
    message = _KEYWORD.sub(")", message)
    message = _OPENING_KEYWORD.sub(lambda match: "--" + match.group(1).replace("_", "-"), message)
    message = _PIP.sub("; this server does not have it installed", message)
    message = _MODE_FLAG.sub(lambda match: f"choose the drafter {_quoted_modes(match.group(1))}", message)
    message = _MODE_NAME.sub(r"drafter '\1'", message)
    return _FLAG.sub(_control, message)


def _quoted_modes(modes: str) -> str:
    return " or ".join(f"'{mode}'" for mode in modes.split(" or "))


def _control(match: re.Match) -> str:
    flag = match.group(0)
    label = CONTROLS.get(flag, flag.removeprefix("--").replace("-", " "))
    return f"the '{label}' setting"
