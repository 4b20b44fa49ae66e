"""Verification of a draft against the main model: pure functions, no models.

Greedy: accept the longest prefix of the draft that equals the main model's argmax, then append the
main model's own token at the first mismatch (or after the last draft token). The output is therefore
exactly the main model's greedy sequence, whatever the drafter proposed.

Sampling (Leviathan et al. / Chen et al.): accept draft token x with probability min(1, p(x)/q(x)); on
the first rejection sample from the normalised residual max(0, p - q); if every token passes, sample a
bonus token from p at the next position. The accepted sequence is distributed exactly as sampling from
the main model alone. A deterministic drafter (prompt lookup, a cross-tokenizer draft) has q = one-hot.
"""

from __future__ import annotations

import torch

from .logits import draw, uniform


def verify_greedy(draft_tokens: list[int], main_logits: torch.Tensor) -> tuple[int, int]:
    """main_logits [len(draft)+1, vocab] (rules already applied). Returns (accepted count, next token)."""
    return verify_greedy_choices(draft_tokens, main_logits.argmax(dim=-1).tolist())


def verify_greedy_choices(draft_tokens: list[int], main_choices: list[int]) -> tuple[int, int]:
    """main_choices: the main model's greedy token at each of the len(draft)+1 positions."""
    accepted = 0
    for proposed, chosen in zip(draft_tokens, main_choices):
        if proposed != chosen:
            break
        accepted += 1
    return accepted, main_choices[accepted]


def verify_sampling(
    draft_tokens: list[int],
    draft_probs: torch.Tensor | None,
    main_probs: torch.Tensor,
    generator: torch.Generator | None = None,
) -> tuple[int, int]:
    """Rejection sampling.

    draft_probs: [len(draft), vocab] distributions the draft tokens were sampled from, or None for a
    deterministic draft. main_probs: [len(draft)+1, vocab] main model distributions (after warping).
    Returns (accepted count, next token).
    """
    for index, token in enumerate(draft_tokens):
        p = main_probs[index]
        if draft_probs is None:
            q = torch.zeros_like(p)
            q[token] = 1.0
        else:
            q = draft_probs[index].to(p.dtype)
        q_token = float(q[token])
        p_token = float(p[token])
        threshold = 1.0 if q_token <= 0 else min(1.0, p_token / q_token)
        if uniform(generator) < threshold:
            continue
        residual = (p - q).clamp_min(0)
        total = float(residual.sum())
        distribution = residual / total if total > 0 else p
        return index, draw(distribution, generator)
    bonus = main_probs[len(draft_tokens)]
    return len(draft_tokens), draw(bonus, generator)
