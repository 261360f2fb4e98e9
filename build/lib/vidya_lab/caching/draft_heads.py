"""Draft heads (EAGLE-style) and multi-token prediction: a drafter built into the target model.

EAGLE (Li et al., ICML 2024, arXiv:2401.15077) drafts with one decoder layer that reads the target's
last hidden state and reuses the target's output head; DeepSeek-V3's multi-token prediction modules
(arXiv:2412.19437) are such layers trained with the model. Either way one draft step is one decoder
layer of the target's shape, with its own KV, plus the output head, on the target's GPUs.
:func:`head_draft_cost_ratio` prices that step through the cost model (a one-layer copy of the
target: same GPUs, format and calibration, so the per-iteration overhead is counted) as the c of
Leviathan et al.'s Theorem 3.8, and :func:`draft_head_at_batch` prices a round of speculation with
it (:func:`~vidya_lab.caching.speculative_at_batch`). The acceptance rate α is the head's, measured
on your traffic (EAGLE reports about 0.8).
"""

from __future__ import annotations

import dataclasses
import functools

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.caching.speculative import MAX_BATCH, AssumedCostDraft, speculative_at_batch


@functools.lru_cache(maxsize=32)
def _head_replica(r: sizing.Replica, layers: int) -> sizing.Replica:
    m = r.model
    head = dataclasses.replace(m, id=f"{m.id}-draft-head-{layers}", name=f"{m.name} draft head",
                               n_layers=layers, published_params=m.published_params * layers / m.n_layers)
    return dataclasses.replace(r, model=head, pp=1)


def head_draft_cost_ratio(r: sizing.Replica, batch: int, context_tokens: int, layers: int = 1) -> float:
    """c = one draft-head step ÷ one plain decode step of the target, at ``batch`` sequences of
    ``context_tokens`` (both through :func:`vidya_lab.sizing.decode_step_time_s`)."""
    sizing._as_replica(r)
    n = v.check_int("layers", layers, minimum=1, maximum=r.model.n_layers - 1)
    b = v.check_int("batch", batch, minimum=1, maximum=MAX_BATCH)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=10**8)
    head = sizing.decode_step_time_s(_head_replica(r, n), b, ctx)
    return head / sizing.decode_step_time_s(r, b, ctx)


def draft_head_at_batch(r: sizing.Replica, batch: int, context_tokens: int, alpha: float,
                        gamma: int, layers: int = 1) -> dict:
    """One round of speculation with a draft head of ``layers`` decoder layers and acceptance
    ``alpha``: :func:`~vidya_lab.caching.speculative_at_batch` with a drafter whose c is
    :func:`head_draft_cost_ratio` at this batch. Same keys; ``drafter`` is ``"draft-head"``."""
    c = head_draft_cost_ratio(r, batch, context_tokens, layers)
    out = speculative_at_batch(r, batch, context_tokens, AssumedCostDraft(alpha, c), gamma)
    out["drafter"] = "draft-head"
    return out


def draft_head_break_even_batch(r: sizing.Replica, context_tokens: int, alpha: float, gamma: int,
                                layers: int = 1, max_batch: int = 4096) -> int | None:
    """Smallest batch at which the draft head is slower than plain decoding (None if never up to
    ``max_batch``); the speed-up falls with the batch, so found by bisection."""
    hi = v.check_int("max_batch", max_batch, minimum=1, maximum=MAX_BATCH)

    def loses(b: int) -> bool:
        return draft_head_at_batch(r, b, context_tokens, alpha, gamma, layers)["speedup"] < 1.0

    if not loses(hi):
        return None
    lo = 1
    if loses(lo):
        return 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if loses(mid) else (mid, hi)
    return hi
