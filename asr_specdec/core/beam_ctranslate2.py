"""Beam search with CTranslate2's semantics (faster-whisper's), plain or speculative: the step and the final
ranking differ from openai's (beam.py); the loop, the speculative replay and the cache rows are beam.py's.

A step of CTranslate2's `BeamSearch::search`, per audio row: every beam's log-probabilities plus its sum (float32)
are candidates, ranked best first over all beams (the first step: the prompt's one beam). Slot k < beam_size takes
candidate k; when that candidate is end-of-text it is a finished hypothesis (its sum, without the end-of-text
token) and the slot takes the next candidate at rank >= beam_size that is not end-of-text. So only end-of-text
candidates ranked among the first beam_size finish (openai also collects those ranked later, before its
beam_size-th live beam). The row is done when round(beam_size * patience) hypotheses are collected (every one found
in the step counts; openai stops adding at that number), or at the length limit, where every slot's candidate
becomes a hypothesis. With length_penalty 0, the row is done once slot 0 has finished at some step. Hypotheses
are ranked by sum / length ** length_penalty (length without end-of-text; openai's default ranks by sum / length
and fills missing candidates with unfinished beams). Equal scores keep the order of collection.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .beam import BeamOutcome, _Audio, _candidates, _top, check_beam_size_and_patience


@dataclass(frozen=True)
class CTranslate2BeamSearch:
    """CTranslate2's beam search options (faster-whisper's beam_size, patience, length_penalty)."""

    beam_size: int = 5
    patience: float | None = None  # done after round(beam_size * patience) hypotheses (None: 1.0)
    length_penalty: float | None = None  # hypotheses ranked by sum / length ** length_penalty (None: 1.0)

    def __post_init__(self):
        check_beam_size_and_patience(self.beam_size, self.patience, "hypothesis")

    @property
    def max_candidates(self) -> int:
        return round(self.beam_size * (1.0 if self.patience is None else self.patience))

    @property
    def penalty(self) -> float:
        return 1.0 if self.length_penalty is None else self.length_penalty

    def rank_score(self, sum_logprob: float, length: int) -> float:
        """CTranslate2's finalize_hypothesis_score (float32 sum / length ** penalty; an empty one: its sum / 0)."""
        divisor = float(length) ** self.penalty
        if divisor == 0:
            return float("-inf") if sum_logprob < 0 else float("inf")
        # float32 rounding of the sum, computed on the host whatever the model's device
        return float(torch.tensor(sum_logprob, dtype=torch.float32, device="cpu") / divisor)

    def step(self, audio: _Audio) -> None:
        _step(audio)

    def outcome(self, audio: _Audio) -> BeamOutcome:
        return _outcome(audio)


def _step(audio: _Audio) -> None:
    eos, size = audio.settings.eos_token_id, audio.beam.beam_size
    # (score, beam, token, its log-probability): beam by beam, best token first; a stable sort keeps that order on ties
    ranked = sorted(_candidates(audio), key=lambda candidate: candidate[0], reverse=True)
    last = len(audio.beams[0].tokens) + 1 >= audio.limit
    secondary = iter(candidate for candidate in ranked[size:] if candidate[2] != eos)
    beams, parents = [], []
    for slot, (score, beam, token, log_prob) in enumerate(ranked[:size]):
        if token == eos or last:
            sequence = tuple(beam.tokens[len(audio.prompt):]) + (token,)
            audio.finished[sequence] = score
            audio.finished_log_probs[sequence] = beam.log_probs + [log_prob]
            if slot == 0 and token == eos:
                audio.slot_zero_finished = True  # CTranslate2's top_beam_finished (its early exit)
            if last:
                continue
            score, beam, token, log_prob = next(secondary)
        parents.append((beam, token))
        beams.append(beam.child(token, score, log_prob))
    if len(audio.beams) == size and beams:
        audio.draft_length.observe_step(len({id(parent) for parent, _ in parents}) == len(parents)
                                        and all(token == _top(audio, parent)[1][0] for parent, token in parents))
    audio.beams = beams
    if audio.beam.penalty == 0:
        collected = getattr(audio, "slot_zero_finished", False) and len(audio.finished) >= 1
    else:
        collected = len(audio.finished) >= audio.beam.max_candidates
    audio.done = last or collected or not beams


def _outcome(audio: _Audio) -> BeamOutcome:
    """CTranslate2's finalize_result: the hypotheses (new tokens, end-of-text included when produced) by score."""
    eos = audio.settings.eos_token_id
    ranked = [(tokens, score, audio.beam.rank_score(score, len(tokens) - (tokens[-1] == eos)))
              for tokens, score in audio.finished.items()]
    order = sorted(range(len(ranked)), key=lambda index: ranked[index][2], reverse=True)
    stats = audio.stats
    tokens, best_score = (list(ranked[order[0]][0]), ranked[order[0]][1]) if order else ([], 0.0)
    stats.new_tokens = len(tokens)
    return BeamOutcome(tokens, best_score, [(tokens_, score_) for tokens_, score_, _ in ranked], stats,
                       list(audio.finished_log_probs[ranked[order[0]][0]]) if order else [])
