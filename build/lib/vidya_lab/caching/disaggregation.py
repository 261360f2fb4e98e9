"""The case for disaggregation: one prefill in a decode batch stretches every running student's step.

Engines that mix prefill chunks and decode steps in one iteration (continuous batching) make each
decoder wait for the prefill's compute. :func:`prefill_interference` measures that stretch through
the cost model; splitting prefill and decode onto different replicas (DistServe, Splitwise) is the
fix, at the price of moving the KV cache between them.
"""

from __future__ import annotations

from vidya_lab import _validate as v
from vidya_lab import sizing


def prefill_interference(r: sizing.Replica, prompt_tokens: int, batch: int, context_tokens: int) -> dict:
    """How much one prefill stretches the decode step it shares (the case for disaggregation).

    Returns ``decode_step_s`` (``batch`` decoders alone), ``mixed_step_s`` (the same step with one
    ``prompt_tokens`` prefill in it, unchunked up to ``max_batched_tokens``) and ``stretch``
    (their ratio): every running student's next token waits that long.
    """
    sizing._as_replica(r)
    p = v.check_int("prompt_tokens", prompt_tokens, minimum=1)
    b = v.check_int("batch", batch, minimum=1)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1)
    chunk = min(p, r.max_batched_tokens)
    alone = sizing.iteration_time_s(r, decode_contexts=[ctx] * b)
    mixed = sizing.iteration_time_s(r, prefill=[(chunk, 0)], decode_contexts=[ctx] * b)
    return {"decode_step_s": alone, "mixed_step_s": mixed, "stretch": mixed / alone}
