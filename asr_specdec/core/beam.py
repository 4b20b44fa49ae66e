"""Beam search with openai-whisper's semantics, plain or speculative, in one loop.

A step of plain beam search (openai's `BeamSearchDecoder` + `MaximumLikelihoodRanker`), per audio row:
every beam's log-probabilities (log-softmax of its logits after the rules), its `beam_size + 1` best tokens
as candidates scored by the beam's sum plus the token's log-probability (in float32, as openai sums them);
the candidates in descending score order (ties keep their order: beam by beam, best token first) become the
next beams until `beam_size` are kept, those ending with end-of-text on the way are finished candidates
(kept while fewer than beam_size * patience are collected). The row is done when that many are finished or
its beams reach its length limit; then unfinished beams fill the candidates up to beam_size, and the best
candidate by sum / length penalty wins (length: tokens before end-of-text; penalty the length itself, or
((5 + length) / 6) ** length_penalty).

Speculative beam search returns exactly that. Each beam carries its drafter's continuation; one main pass
scores every beam's draft as a row (the logits after the beam and after each draft prefix: a "path").
The steps above are then replayed on those logits for as long as every beam lies on a scored path: a beam
extended by the draft's next token at its place stays on it, any other child leaves it, and a new pass
starts from the beams of the last replayed step. A beam's logits are those of its own token sequence,
computed by a kernel whose numbers per token do not depend on the other tokens of the pass (the native
kernels), so every replayed step sees the bits the plain step sees, and decides the same.

Cache rows: each audio row holds beam_size rows of the target. A child keeps its parent's row when it is the
parent's first child; another child moves to a row whose beam left, which first takes the parent's keys and
values from the first position where the two rows' token sequences differ (`Target.copy_positions`): rows of
one audio share long prefixes, so no step copies whole caches.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch

from ..errors import OptionError
from .beam_schedule import BeamSchedule
from .drafter import Drafter
from .stats import DecodeStats


def check_beam_size_and_patience(beam_size, patience, collected: str) -> None:
    """An OptionError for a beam size or patience no beam search can run with (openai's and CTranslate2's alike:
    round(beam_size * patience) finished `collected` end the search)."""
    if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
        raise OptionError("beam_size", f"{{beam_size}} must be a positive integer, not {beam_size}")
    if patience is not None and not patience > 0:
        raise OptionError("patience", f"{{patience}} must be positive, not {patience}")
    if round(beam_size * (patience or 1.0)) < 1:
        raise OptionError("patience", f"{{beam_size}} {beam_size} with {{patience}} {patience} collects no {collected}")


@dataclass(frozen=True)
class BeamSearch:
    """openai-whisper's beam search options (DecodingOptions' beam_size, patience, length_penalty)."""

    beam_size: int = 5
    patience: float | None = None  # finish after round(beam_size * patience) candidates (None: 1.0)
    length_penalty: float | None = None  # None: divide the sum by the length; else the Google NMT penalty

    def __post_init__(self):
        check_beam_size_and_patience(self.beam_size, self.patience, "candidate")
        if self.length_penalty is not None and not 0 <= self.length_penalty <= 1:
            raise OptionError("length_penalty",
                              f"{{length_penalty}} must be between 0 and 1, not {self.length_penalty}")

    @property
    def max_candidates(self) -> int:
        return round(self.beam_size * (self.patience or 1.0))

    def rank_score(self, sum_logprob: float, length: int) -> float:
        """MaximumLikelihoodRanker's score of a candidate of `length` tokens (end-of-text not counted)."""
        length = max(length, 1)  # an empty candidate (openai would divide by zero) scores its sum
        penalty = length if self.length_penalty is None else ((5 + length) / 6) ** self.length_penalty
        return sum_logprob / penalty

    def step(self, audio: _Audio) -> None:
        _step(audio)

    def outcome(self, audio: _Audio) -> BeamOutcome:
        return _outcome(audio)


@dataclass
class BeamOutcome:
    """One audio row's result: the winning candidate's new tokens (ending with end-of-text when the model
    produced it) and sum of log-probabilities, every candidate (new tokens, sum) in openai's order, telemetry, and
    the winner's log-probability of each of its tokens (float32 values of the rules' log-softmax, the ones its sum
    added: a score of the window needs no pass of its own)."""

    tokens: list[int]
    sum_logprob: float
    candidates: list[tuple[tuple[int, ...], float]]
    stats: DecodeStats
    log_probs: list[float] = field(default_factory=list)


@dataclass
class _Path:
    """What one pass scored for one cache row: the logits [len(draft) + 1, vocab] after `base` + draft[:i]."""

    base: list[int]
    draft: list[int]
    logits: torch.Tensor
    top: dict = field(default_factory=dict)  # offset -> (log-probabilities, tokens) of the best beam_size + 1


@dataclass
class _Beam:
    tokens: list[int]  # the whole sequence, prompt included
    sum_logprob: float
    row: int  # its cache row within the audio's rows
    path: _Path | None = None  # tokens == path.base + path.draft[:offset] while on a scored path
    offset: int = 0
    log_probs: list[float] = field(default_factory=list)  # of each new token (after the prompt)

    def on_path(self) -> bool:
        return self.path is not None

    def child(self, token: int, score: float, log_prob: float) -> _Beam:
        """This beam extended by `token` (its sum now `score`), on its draft path still if the draft has `token`
        next."""
        child = _Beam(self.tokens + [token], score, self.row, log_probs=self.log_probs + [log_prob])
        if self.path is not None and self.offset < len(self.path.draft) and self.path.draft[self.offset] == token:
            child.path, child.offset = self.path, self.offset + 1
        return child


@dataclass
class _Audio:
    """One audio row: its beams, finished candidates, rows and what each row's cache holds."""

    prompt: list[int]
    settings: object  # GenerationSettings (engine.py)
    beam: BeamSearch  # or CTranslate2BeamSearch: the same fields, its own step and outcome
    limit: int
    draft_length: BeamSchedule  # shared by every audio row with this beam size, kept across calls
    beams: list[_Beam]
    held: list[list[int]]  # per cache row: the tokens whose keys/values it holds at positions 0..
    finished: dict = field(default_factory=dict)  # new tokens -> sum of log-probabilities, in collection order
    finished_log_probs: dict = field(default_factory=dict)  # new tokens -> the log-probability of each
    stats: DecodeStats = field(default_factory=DecodeStats)
    done: bool = False


def beam_search_batch(target, prompts: list[list[int]], settings: list, drafter: Drafter | None = None,
                      held: list[list[int]] | None = None) -> list[BeamOutcome]:
    """Beam search after each prompt (row b of `target`, and of the drafter, holds prompt b's audio), every row
    with its own settings (`settings[b].beam`). The target's rows are expanded to beam_size rows per audio; rows
    of finished audio leave. `drafter` None: plain beam search. `held[b]`: tokens the target's row b holds
    already from position 0 (a start of prompt b; its keys and values go with the row's copies)."""
    held = held or [[] for _ in prompts]
    if any(prompt[:len(start)] != start for prompt, start in zip(prompts, held)):
        raise ValueError("a target row can only hold a start of its prompt")
    sizes = [row.beam.beam_size for row in settings]
    # slot numbers are host-side bookkeeping: each cache moves them to its own tensors' device
    expanded = torch.tensor([audio for audio, size in enumerate(sizes) for _ in range(size)], device="cpu")
    if len(expanded) != len(prompts):
        memo: dict = {}
        target.keep(expanded, memo)
        if drafter is not None:
            drafter.keep(expanded, memo)
    audios = [_Audio(list(prompt), row, row.beam, min(len(prompt) + row.max_new_tokens, target.max_positions),
                     row.draft_length.for_beams(size), [_Beam(list(prompt), 0.0, 0)],
                     [list(start) for _ in range(size)])
              for prompt, row, size, start in zip(prompts, settings, sizes, held)]
    started = time.perf_counter()
    for audio in audios:
        audio.done = len(audio.prompt) >= audio.limit
    active = _leave(audios, list(range(len(audios))), target, drafter)
    while active:
        batch = [audios[index] for index in active]
        draft_started = time.perf_counter()
        drafts = _drafts(drafter, batch)
        verify_started = time.perf_counter()
        _score(target, batch, drafts)
        verify_seconds = time.perf_counter() - verify_started
        shared = (time.perf_counter() - draft_started) / len(batch)  # the draft and the main pass, per audio row
        first = 0
        for audio, audio_drafts in zip(batch, drafts):
            own_started = time.perf_counter()
            prompt_pass = audio.stats.main_passes == 0  # it fed the prompt: not a step's cost
            steps = _replay(audio)
            wanted = max((len(draft) for draft in audio_drafts), default=0)
            audio.stats.main_passes += 1
            audio.stats.beam_steps += steps
            audio.stats.drafted_tokens += wanted
            audio.stats.accepted_tokens += min(max(steps - 1, 0), wanted)
            audio.stats.verify_seconds += verify_seconds / len(batch)
            if audio.done:
                audio.stats.total_seconds = time.perf_counter() - started
            else:
                _settle_rows(audio, target, first)
            round_seconds = None if prompt_pass else shared + time.perf_counter() - own_started
            audio.draft_length.update(wanted, steps, round_seconds)
            first += len(audio.held)
        active = _leave(audios, active, target, drafter)
    return [audio.beam.outcome(audio) for audio in audios]


def _leave(audios: list[_Audio], active: list[int], target, drafter) -> list[int]:
    """The audio rows still searching; the rows of finished ones leave the target's (and drafter's) batch."""
    still = [index for index in active if not audios[index].done]
    if len(still) == len(active):
        return active
    if still:
        rows, first = [], 0
        for index in active:
            size = len(audios[index].held)
            if not audios[index].done:
                rows += range(first, first + size)
            first += size
        memo: dict = {}
        kept = torch.tensor(rows, device="cpu")
        target.keep(kept, memo)
        if drafter is not None:
            drafter.keep(kept, memo)
    return still


def _drafts(drafter: Drafter | None, batch: list[_Audio]) -> list[list[list[int]]]:
    """Per audio, per cache row: the draft continuing that row's beam (empty for a row without a beam)."""
    sequences, wanted = [], []
    for audio in batch:
        by_row = {beam.row: beam for beam in audio.beams}
        length = min(audio.draft_length.tokens, audio.limit - len(audio.beams[0].tokens) - 1)
        if len(audio.beams) < audio.beam.beam_size:  # the first step: at most one of its children follows a draft
            length = 0
        for row in range(len(audio.held)):
            sequences.append(by_row[row].tokens if row in by_row else audio.prompt)
            wanted.append(max(length, 0) if row in by_row and drafter is not None else 0)
    drafts = [[] for _ in sequences]
    if any(wanted):
        draft_started = time.perf_counter()
        proposals = drafter.draft_rows(sequences, wanted)
        seconds = time.perf_counter() - draft_started
        drafts = [proposal.tokens[:cap] for proposal, cap in zip(proposals, wanted)]
        for audio in batch:
            audio.stats.draft_seconds += seconds / len(batch)
        first = 0
        for audio in batch:
            audio.stats.draft_passes += max((proposal.forward_passes for proposal in
                                             proposals[first:first + len(audio.held)]), default=0)
            first += len(audio.held)
    grouped, first = [], 0
    for audio in batch:
        grouped.append(drafts[first:first + len(audio.held)])
        first += len(audio.held)
    return grouped


def _score(target, batch: list[_Audio], drafts: list[list[list[int]]]) -> None:
    """One main pass: every beam's row fed what its cache lacks of the beam, then its draft; each beam gets the
    path of logits that pass scored."""
    feeds, starts, scored, owners = [], [], [], []
    for audio, audio_drafts in zip(batch, drafts):
        by_row = {beam.row: beam for beam in audio.beams}
        for row, draft in enumerate(audio_drafts):
            beam = by_row.get(row)
            if beam is None:
                feeds.append([])
                starts.append(0)
                scored.append(0)
                owners.append(None)
                continue
            kept = min(_common_prefix(audio.held[row], beam.tokens), len(beam.tokens) - 1)
            feeds.append(beam.tokens[kept:] + draft)
            starts.append(kept)
            scored.append(len(draft) + 1)
            owners.append((audio, beam, draft))
    logits = target.extend_rows(feeds, starts, scored)
    for owner, row_logits in zip(owners, logits):
        if owner is not None:
            audio, beam, draft = owner
            audio.held[beam.row] = beam.tokens + draft
            beam.path, beam.offset = _Path(list(beam.tokens), draft, row_logits), 0


def _common_prefix(first: list[int], second: list[int]) -> int:
    limit = min(len(first), len(second))
    for index in range(limit):
        if first[index] != second[index]:
            return index
    return limit


def _replay(audio: _Audio) -> int:
    """Plain beam steps on the scored paths, for as long as every beam lies on one; the number of steps."""
    steps = 0
    while not audio.done and all(beam.on_path() for beam in audio.beams):
        audio.beam.step(audio)  # the algorithm's step: openai's (_step) or CTranslate2's (beam_ctranslate2.py)
        steps += 1
    return steps


def _top(audio: _Audio, beam: _Beam) -> tuple[torch.Tensor, list[int]]:
    """The beam's best beam_size + 1 (log-probability, token) pairs (worked out by `_tops`)."""
    return beam.path.top[beam.offset]


def _tops(audio: _Audio, beams: list[_Beam]) -> None:
    """Work out `_top` of every beam lacking it, all in one block: the rules, log-softmax and top-k of each row
    work row by row, so a row's numbers never depend on how many rows are worked out with it (plain steps take
    every beam at offset 0, a replay every beam at its own path and offset)."""
    missing = [beam for beam in beams if beam.offset not in beam.path.top]
    if not missing:
        return
    block = torch.stack([beam.path.logits[beam.offset] for beam in missing])
    log_probs = audio.settings.rules.log_probs_rows(block, [(len(beam.tokens), beam.tokens) for beam in missing],
                                                    overwrite=True)
    values, tokens = log_probs.topk(audio.beam.beam_size + 1)
    for beam, beam_values, beam_tokens in zip(missing, values, tokens.tolist()):
        beam.path.top[beam.offset] = (beam_values, beam_tokens)


def _candidates(audio: _Audio) -> list[tuple[float, _Beam, int, float]]:
    """Every beam's best beam_size + 1 children as (the child's sum, parent, token, the token's log-probability),
    beam by beam, best token first; the sums in float32, as openai and CTranslate2 add them."""
    _tops(audio, audio.beams)
    values = torch.stack([_top(audio, beam)[0] for beam in audio.beams])
    totals = torch.tensor([beam.sum_logprob for beam in audio.beams], dtype=torch.float32, device=values.device)
    sums = (values + totals[:, None]).tolist()
    candidates = []
    for beam, beam_sums, beam_values in zip(audio.beams, sums, values.tolist()):
        candidates += [(score, beam, token, value)
                       for score, token, value in zip(beam_sums, _top(audio, beam)[1], beam_values)]
    return candidates


def _step(audio: _Audio) -> None:
    """One step of openai's BeamSearchDecoder.update for this audio row."""
    eos, size = audio.settings.eos_token_id, audio.beam.beam_size
    # (score, beam, token, its log-probability) in openai's insertion order: beam by beam, best token first
    candidates = _candidates(audio)
    beams, finished, parents = [], [], []
    for score, beam, token, log_prob in sorted(candidates, key=lambda candidate: candidate[0], reverse=True):
        if token == eos:
            finished.append((tuple(beam.tokens[len(audio.prompt):]) + (token,), score, beam.log_probs + [log_prob]))
            continue
        parents.append((beam, token))
        beams.append(beam.child(token, score, log_prob))
        if len(beams) == size:
            break
    for sequence, score, log_probs in finished:
        if len(audio.finished) >= audio.beam.max_candidates:
            break
        audio.finished[sequence] = score
        audio.finished_log_probs[sequence] = log_probs
    if len(audio.beams) == size:  # could a drafter proposing the main model's best tokens have replayed it?
        audio.draft_length.observe_step(len({id(parent) for parent, _ in parents}) == len(parents)
                                        and all(token == _top(audio, parent)[1][0] for parent, token in parents))
    audio.beams = beams
    audio.done = (len(audio.finished) >= audio.beam.max_candidates or not beams
                  or len(beams[0].tokens) >= audio.limit)


def _settle_rows(audio: _Audio, target, first: int) -> None:
    """Give every beam a cache row: a parent's first child keeps the parent's row, the others move to rows no
    beam holds, which first take the parent's keys and values where their contents differ."""
    taken: set[int] = set()
    movers = []
    for beam in audio.beams:
        if beam.row in taken:
            movers.append(beam)
        else:
            taken.add(beam.row)
    free = iter([row for row in range(len(audio.held)) if row not in taken])
    moves = []
    for beam in movers:
        source, destination = beam.row, next(free)
        needed = beam.tokens[:-1]  # the last token is fed by the next pass
        begin = _common_prefix(audio.held[destination], needed)
        if begin < len(needed):
            moves.append((source, destination, begin, len(needed)))
        audio.held[destination] = list(needed)
        beam.row = destination
    if moves:  # sources keep their rows and are never destinations: every move reads unchanged rows
        target.copy_positions([(first + source, first + destination, begin, end)
                               for source, destination, begin, end in moves])


def _outcome(audio: _Audio) -> BeamOutcome:
    """openai's finalize (unfinished beams fill the candidates up to beam_size) and ranking."""
    candidates, log_probs = dict(audio.finished), dict(audio.finished_log_probs)
    if len(candidates) < audio.beam.beam_size:
        for beam in sorted(audio.beams, key=lambda item: item.sum_logprob, reverse=True):
            candidates[tuple(beam.tokens[len(audio.prompt):])] = beam.sum_logprob
            log_probs[tuple(beam.tokens[len(audio.prompt):])] = beam.log_probs
            if len(candidates) >= audio.beam.beam_size:
                break
    eos = audio.settings.eos_token_id
    ranked = [(tokens, score, audio.beam.rank_score(score, len(tokens) - (1 if tokens and tokens[-1] == eos else 0)))
              for tokens, score in candidates.items()]
    best = max(range(len(ranked)), key=lambda index: (ranked[index][2], -index)) if ranked else None
    stats = audio.stats
    tokens, score = (list(ranked[best][0]), ranked[best][1]) if best is not None else ([], 0.0)
    stats.new_tokens = len(tokens)
    return BeamOutcome(tokens, score, [(tokens_, score_) for tokens_, score_, _ in ranked], stats,
                       list(log_probs[ranked[best][0]]) if best is not None else [])
