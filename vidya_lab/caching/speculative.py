"""Speculative decoding: guess γ tokens cheaply, let the big model check them all in one step.

:func:`spec_expected_tokens` (1 − α^(γ+1)) / (1 − α) tokens per target step,
:func:`spec_walltime_speedup` (Leviathan et al. Theorem 3.8) and :func:`spec_decode_at_batch`, the
same through the cost model, where the verify step processes γ+1 tokens per sequence (why it loses
at high load).
"""

from __future__ import annotations

from vidya_lab import _validate as v
from vidya_lab import sizing


def spec_expected_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens per target-model step: (1 − α^(γ+1)) / (1 − α); γ + 1 at α = 1.

    α is the probability the target accepts a draft token (i.i.d.), γ the draft tokens per step.
    Leviathan et al. (arXiv:2211.17192) §3.1, Eq. 1. Limits: α → 0 gives 1 (only the target's own
    token), α → 1 gives γ + 1.
    """
    a = v.check_fraction("alpha", alpha)
    g = v.check_int("gamma", gamma, minimum=0)
    if a == 1.0:
        return float(g + 1)
    return (1.0 - a ** (g + 1)) / (1.0 - a)


def spec_walltime_speedup(alpha: float, gamma: int, draft_cost_ratio: float) -> float:
    """Expected wall-time improvement: (1 − α^(γ+1)) / ((1 − α)(γc + 1)).

    c = draft step time / target step time. Leviathan et al. Theorem 3.8; it assumes the target's
    step costs the same for γ + 1 tokens as for one (true at batch 1, memory-bound), which
    :func:`spec_decode_at_batch` does not assume.
    """
    c = v.check_real("draft_cost_ratio", draft_cost_ratio, minimum=0.0)
    return spec_expected_tokens(alpha, gamma) / (gamma * c + 1.0)


def spec_decode_at_batch(r: sizing.Replica, batch: int, context_tokens: int, alpha: float,
                         gamma: int, draft_cost_ratio: float = 0.05) -> dict:
    """Speculative decoding through the cost model at a given batch.

    Plain decoding: one step of ``batch`` sequences, one token each
    (:func:`vidya_lab.sizing.decode_step_time_s`). Speculative: the draft runs γ steps costing
    γ·c·(plain step), then the target verifies γ + 1 tokens per sequence in one iteration: a chunk of
    γ + 1 tokens per sequence attending to its context, with γ + 1 logit rows
    (``Replica.step_time_s``). Each sequence advances :func:`spec_expected_tokens` tokens.

    At batch 1 the verify step is memory-bound and costs about one plain step (the Theorem 3.8 gain);
    at large batch it is compute-bound and costs up to γ + 1 plain steps, and the gain turns into a
    loss. Returns ``plain_step_s``, ``verify_step_s``, ``draft_s``, ``expected_tokens``,
    ``plain_tokens_per_s``, ``spec_tokens_per_s``, ``speedup``.
    """
    sizing._as_replica(r)
    b = v.check_int("batch", batch, minimum=1)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    g = v.check_int("gamma", gamma, minimum=0)
    c = v.check_real("draft_cost_ratio", draft_cost_ratio, minimum=0.0)
    e = spec_expected_tokens(alpha, g)
    plain = sizing.decode_step_time_s(r, b, ctx)
    t = g + 1
    verify = r.step_time_s(b * t, b * (t * ctx + t * (t + 1) / 2), b * (ctx + t), b * t, 0, 0)
    draft = g * c * plain
    spec_tps = b * e / (verify + draft)
    return {"batch": b, "plain_step_s": plain, "verify_step_s": verify, "draft_s": draft,
            "expected_tokens": e, "plain_tokens_per_s": b / plain, "spec_tokens_per_s": spec_tps,
            "speedup": spec_tps / (b / plain)}


def spec_break_even_batch(r: sizing.Replica, context_tokens: int, alpha: float, gamma: int,
                          draft_cost_ratio: float = 0.05, max_batch: int = 4096) -> int | None:
    """Smallest batch at which speculative decoding is slower than plain decoding
    (:func:`spec_decode_at_batch` speedup < 1), or None if it never is up to ``max_batch``.

    The speedup falls with batch (the verify step turns compute-bound); found by bisection.
    """
    hi = v.check_int("max_batch", max_batch, minimum=1)

    def loses(b: int) -> bool:
        return spec_decode_at_batch(r, b, context_tokens, alpha, gamma, draft_cost_ratio)["speedup"] < 1.0

    if not loses(hi):
        return None
    lo = 1
    if loses(lo):
        return 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if loses(mid):
            hi = mid
        else:
            lo = mid
    return hi
