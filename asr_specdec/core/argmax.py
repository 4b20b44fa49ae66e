"""The exact greedy choice over a large vocabulary without the full float32 projection.

Greedy decoding needs only argmax_v (h . W_v), and on a CPU the float32 product with Whisper's 51,865-row
output matrix costs as much as the rest of a decoder pass. So the product is first taken in bfloat16 (half
the memory traffic, and AVX512-BF16 arithmetic), with a rigorous bound on how far it can be from the float32
one; only the tokens whose approximate score comes within that bound of the best can be the true argmax, and
exactly those (in practice 1-3 per row) are scored again in float32.

The bound, per row h and any vocabulary row v (Cauchy-Schwarz; W~, h~ are the bfloat16 roundings):
    |h.W_v - h~.W~_v| <= ||h - h~|| * max_v ||W~_v|| + ||h|| * max_v ||W_v - W~_v||
plus the rounding of the bfloat16 result itself (relative 2^-8, taken generously as 2^-6 of the largest
score) and float32 accumulation. A candidate is any token whose approximate score is within twice the bound
of the best approximate score. The chosen token is the argmax of the candidates' float32 scores: the same
token as the argmax of the full float32 product unless its top two scores are within float32 rounding
(~1e-5) of each other, the near-tie that any change of summation order (a batched pass, another BLAS
kernel) can already flip.
"""

from __future__ import annotations

import torch

RESULT_ROUNDING = 2.0 ** -6  # bfloat16 keeps 8 significant bits; generous for accumulation order too
SLACK = 1e-3


class CertifiedArgmax:
    def __init__(self, weight: torch.Tensor):
        self.weight = weight
        self.low = weight.to(torch.bfloat16)
        low = self.low.float()
        self.low_norm = float(low.norm(dim=1).max())
        self.rounding_norm = float((weight.float() - low).norm(dim=1).max())

    def __call__(self, hidden: torch.Tensor, suppressed: torch.Tensor | None = None) -> torch.Tensor:
        """argmax_v of hidden @ weight^T per row (hidden [rows, width]), with `suppressed` [rows, vocab]
        (True = never chosen) excluded. Returns token ids [rows]."""
        hidden = hidden.to(self.weight.dtype)
        low_hidden = hidden.to(torch.bfloat16)
        approximate = (self.low @ low_hidden.T).T.float()  # weight-major: near memory speed for few rows
        if suppressed is not None:
            approximate.masked_fill_(suppressed, -float("inf"))
        best = approximate.max(dim=1).values
        bound = ((hidden - low_hidden.float()).norm(dim=1) * self.low_norm + hidden.norm(dim=1) * self.rounding_norm
                 + best.abs() * RESULT_ROUNDING + SLACK)
        rows, tokens = (approximate >= (best - 2 * bound)[:, None]).nonzero(as_tuple=True)
        exact = (hidden[rows] * self.weight[tokens]).sum(dim=1)
        # per row, the candidate with the highest exact score (the lowest id among equals, as torch.argmax)
        order = torch.argsort(tokens, stable=True)
        rows, tokens, exact = rows[order], tokens[order], exact[order]
        winner = torch.full((hidden.shape[0],), -float("inf"), dtype=exact.dtype, device=exact.device)
        winner.scatter_reduce_(0, rows, exact, reduce="amax")
        is_best = exact == winner[rows]
        positions = torch.arange(tokens.numel(), device=exact.device)
        first = torch.full((hidden.shape[0],), tokens.numel(), dtype=torch.long, device=exact.device)
        first.scatter_reduce_(0, rows[is_best], positions[is_best], reduce="amin")
        return tokens[first]
