"""What one request feels: time to first token on an idle replica, and the step time while decoding.

All of it is :func:`vidya_lab.sizing.cost.iteration_time_s` of a particular batch:

* :func:`prefill_time_s` — one prompt alone, chunked by ``max_batched_tokens``; :func:`ttft_s` adds
  the front end's ``request_overhead_s`` (the floor of TTFT: no queue, no neighbours);
* :func:`decode_step_time_s` — one decode iteration of B sequences: the TPOT at batch B;
* :func:`decode_steps_time_s` — consecutive steps of a fixed batch (static batching);
* :func:`critical_batch_size` — the batch at which decode turns from memory- to compute-bound;
* :func:`throughput_latency_curve` — TPOT and tokens/s as the batch grows.
"""

from __future__ import annotations

import math

from vidya_lab import _validate as v
from vidya_lab.sizing.replica import Replica, _as_replica

#: Longest prompt or context these functions accept, tokens (far beyond any model's context).
MAX_TOKENS = 10_000_000
#: Most decode steps :func:`decode_steps_time_s` adds up in one call.
MAX_STEPS = 1_000_000
#: Largest batch the step-time questions accept (arithmetic only: an engine's own cap is
#: :data:`~vidya_lab.sizing.replica.MAX_NUM_SEQS`).
MAX_BATCH = 10_000_000


def prefill_time_s(r: Replica, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """Time to prefill one prompt on an idle replica (= TTFT at idle without the front end), seconds.

    A prompt longer than ``max_batched_tokens`` is processed in chunks, one iteration each. The
    first ``cached_tokens`` are found in a prefix cache (chapter 4): they are attended to, not
    computed.
    """
    _as_replica(r)
    n = v.check_int("prompt_tokens", prompt_tokens, minimum=1, maximum=MAX_TOKENS)
    k = v.check_cached_tokens(cached_tokens, n, "prompt_tokens")
    step = r.max_batched_tokens
    total, done = 0.0, k
    while done < n:
        c = min(step, n - done)
        total += r.step_time_s(c, c * done + c * (c + 1) / 2, done + c, 1, 0, 0)
        done += c
    return total


def ttft_s(r: Replica, prompt_tokens: int, cached_tokens: int = 0) -> float:
    """Time to first token of one request on an idle replica, seconds.

    Formula: the calibration's ``request_overhead_s`` + :func:`prefill_time_s` (with
    ``cached_tokens`` of the prompt found in a prefix cache).
    """
    return _as_replica(r).calibration.request_overhead_s + prefill_time_s(r, prompt_tokens,
                                                                          cached_tokens)


def decode_step_time_s(r: Replica, batch: int, context_tokens: int) -> float:
    """One decode iteration of ``batch`` sequences, each attending to ``context_tokens``, seconds.

    This is the TPOT (time per output token) at batch ``batch`` when no prefill interrupts.
    """
    _as_replica(r)
    b = v.check_int("batch", batch, minimum=1, maximum=MAX_BATCH)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=MAX_TOKENS)
    return r.step_time_s(0, 0, 0, 0, b, b * ctx)


def decode_steps_time_s(r: Replica, batch: int, context_tokens: int, steps: int) -> float:
    """Time of ``steps`` consecutive decode iterations of a fixed batch, seconds (static batching).

    Step j (0-based) has ``batch`` sequences attending to ``context_tokens + j`` tokens each: the sum
    of :func:`decode_step_time_s` over j.
    """
    _as_replica(r)
    b = v.check_int("batch", batch, minimum=1, maximum=MAX_BATCH)
    ctx0 = v.check_int("context_tokens", context_tokens, minimum=1, maximum=MAX_TOKENS)
    n = v.check_int("steps", steps, minimum=0, maximum=MAX_STEPS)
    step = r.step_time_s
    return sum(step(0, 0, 0, 0, b, b * (ctx0 + j)) for j in range(n))


def critical_batch_size(r: Replica, context_tokens: int = 0) -> float:
    """Decode batch at which compute time equals memory time (beyond it decode is compute-bound).

    Per GPU of a stage, with ρ = (η_c·F)/(η_m·BW) the calibrated ridge in FLOP per byte, f the FLOPs
    of one decoding sequence (2·P_act + 2·V·d/tp + A·ctx), W the weight bytes read and k the KV bytes
    per token, compute B·f/(η_c·F) equals memory (W + B·k·(ctx+1))/(η_m·BW) at

        B* = ρ·W / (f − ρ·k·(ctx+1))        (times pp micro-batches for a pipeline)

    With context 0 and no output head this is the classic (F/BW)·(bytes per parameter)/2 (295 for
    H100 bf16 at efficiencies 1; scaling-book ``inference.md``). Returns ``math.inf`` when
    f ≤ ρ·k·(ctx+1): long contexts keep decode memory-bound at any batch. For an MoE every expert is
    counted as read (the large-batch case).
    """
    _as_replica(r)
    ctx = v.check_int("context_tokens", context_tokens, minimum=0, maximum=MAX_TOKENS)
    c = r._cost
    ratio = c.flops_per_s / c.bytes_per_s
    flops_per_seq = c.flops_per_token + c.flops_per_logit_row + c.flops_per_pair * ctx
    denom = flops_per_seq - ratio * c.kv_bytes_per_token * (ctx + 1)
    if denom <= 0:
        return math.inf
    return r.pp * ratio * (c.dense_weight_bytes + c.expert_weight_bytes) / denom


def throughput_latency_curve(r: Replica, batches, context_tokens: int) -> list[dict]:
    """TPOT and decode tokens/s as batch grows: one dict per batch (batch, tpot_s, tokens_per_s)."""
    if isinstance(batches, (str, bytes)) or not hasattr(batches, "__iter__"):
        raise TypeError(f"batches must be a sequence of batch sizes, got {type(batches).__name__}")
    batches = list(batches)
    v.check_work("batches", len(batches), 100_000, unit="batch sizes")
    out = []
    for b in batches:
        t = decode_step_time_s(r, b, context_tokens)
        out.append({"batch": int(b), "tpot_s": t, "tokens_per_s": int(b) / t})
    return out
