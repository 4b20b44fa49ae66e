"""How to find speakers, in one frozen value; `diarize=` values (True, a count, or these options) mapped onto it."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from ...core.limits import LIMITS
from ...errors import SpecdecError

CHANNEL_MODES = ("auto", "mix")
ENCODER_PRECISIONS = ("auto", "float32", "bfloat16")


@dataclass(frozen=True)
class SpeakerOptions:
    speakers: int | None = None  # how many people speak; None: estimated (the rule: `same_speaker_distance`)
    max_speakers: int = 8  # an estimate never goes above this
    # clusters of windows whose mean cosine distance is under this are one voice (average linkage); tuned on the
    # shared clips' conversations (eval/bench/speakers.py)
    same_speaker_distance: float = 0.35
    # voices whose centres are closer than this are one, even when more speakers were asked for (clustering.py)
    distinct_voice_distance: float = 0.2
    # a voice needs at least this many embedding windows (3: 3.2 s of speech at the default step), given count or
    # estimated; a smaller group's windows join their nearest voice (clustering.py)
    fewest_voice_windows: int = 3
    step_seconds: float = 0.8  # between embedding windows (each 1.6 s, the model's)
    min_turn_seconds: float = 1.0  # a shorter run of one speaker between two runs of another is theirs
    # stereo: "auto" labels by channel when the two channels carry different voices (a speaker each, as
    # faster-whisper's split_stereo users transcribe them); "mix" diarizes the mixed-down audio
    channels: str = "auto"
    # the speaker encoder's products: "float32" gives Resemblyzer's embeddings exactly; "auto" is bfloat16 where the
    # CPU multiplies it natively (twice as fast there), else float32 (encoder.py)
    encoder_precision: str = "auto"

    def __post_init__(self):
        LIMITS.check("diarize", self.speakers)  # the number of speakers asked for
        if self.channels not in CHANNEL_MODES:
            raise SpecdecError(f"unknown channels mode '{self.channels}': choose one of {', '.join(CHANNEL_MODES)}")
        if self.encoder_precision not in ENCODER_PRECISIONS:
            raise SpecdecError(f"unknown encoder precision '{self.encoder_precision}': choose one of "
                               f"{', '.join(ENCODER_PRECISIONS)}")
        if isinstance(self.fewest_voice_windows, bool) or not isinstance(self.fewest_voice_windows, numbers.Integral) \
                or self.fewest_voice_windows < 1:
            raise SpecdecError(f"fewest_voice_windows must be a whole number >= 1, not {self.fewest_voice_windows!r}")
        if not 0.1 <= self.step_seconds <= 1.6:
            raise SpecdecError(f"step_seconds must be between 0.1 and 1.6, not {self.step_seconds}")


def speaker_options(value) -> SpeakerOptions | None:
    """`diarize=`: False/None off, True estimated, N speakers, or SpeakerOptions."""
    if value is None or value is False:
        return None
    if isinstance(value, SpeakerOptions):
        return value
    if value is True:
        return SpeakerOptions()
    if isinstance(value, numbers.Integral):
        return SpeakerOptions(speakers=int(value))
    raise SpecdecError(f"diarize takes True (estimate the speakers), a number of speakers, or SpeakerOptions, "
                       f"not {value!r}")
