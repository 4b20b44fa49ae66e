"""Acceptance and timing telemetry carried by every result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class DecodeStats:
    new_tokens: int = 0
    drafted_tokens: int = 0
    accepted_tokens: int = 0
    main_passes: int = 0  # main-model decoder passes after the prompt (one per round)
    draft_passes: int = 0  # drafter model forward passes (0 for model-free drafters)
    beam_steps: int = 0  # beam search steps (each one token on every beam); 0 without beam search
    encoder_seconds: float = 0.0
    draft_seconds: float = 0.0
    verify_seconds: float = 0.0
    total_seconds: float = 0.0
    # one flag per generated token: True where it was accepted from the draft, False where the main
    # model supplied it (its correction or bonus token)
    token_from_draft: list[bool] = field(default_factory=list)

    @property
    def acceptance_rate(self) -> float:
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else 0.0

    @property
    def tokens_per_main_pass(self) -> float:
        return self.new_tokens / self.main_passes if self.main_passes else 0.0

    @property
    def beam_steps_per_main_pass(self) -> float:
        """Beam search steps replayed per main-model pass (1.0 for plain beam search)."""
        return self.beam_steps / self.main_passes if self.main_passes else 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.total_seconds if self.total_seconds else 0.0

    def add(self, other: DecodeStats) -> DecodeStats:
        """Accumulate another result's numbers into this one (e.g. the windows of a long file)."""
        for name in ("new_tokens", "drafted_tokens", "accepted_tokens", "main_passes", "draft_passes", "beam_steps",
                     "encoder_seconds", "draft_seconds", "verify_seconds", "total_seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.token_from_draft.extend(other.token_from_draft)
        return self

    def as_dict(self) -> dict:
        values = asdict(self)
        values.pop("token_from_draft")
        values.update(acceptance_rate=round(self.acceptance_rate, 4),
                      tokens_per_main_pass=round(self.tokens_per_main_pass, 3),
                      beam_steps_per_main_pass=round(self.beam_steps_per_main_pass, 3),
                      tokens_per_second=round(self.tokens_per_second, 2))
        for name in ("encoder_seconds", "draft_seconds", "verify_seconds", "total_seconds"):
            values[name] = round(values[name], 4)
        return values
