"""The physical bound on output tokens/s: what no engine, however good, can beat on these GPUs.

The cost model's "roofline" (the cost model at efficiencies 1) still inherits an engine's memory
rule, block rounding and batch caps, so a better engine can beat it. The bound here assumes the
best case of everything at once, over the whole set of ``gpus`` GPUs treated as one pool:

* memory: every byte of every GPU (the device-reported total) not holding weights holds KV, with
  no runtime reserve, no activations and no block rounding; a decoding sequence holds on average
  isl + osl/2 tokens of context, so the batch is at most
  B = (gpus · HBM − weights) / (KV bytes per token · (isl + osl/2));
* bandwidth: each decode step reads at least the weights one token uses (every weight for a dense
  model, the active experts for an MoE) and the KV of the batch, at the PEAK datasheet bandwidth
  of all GPUs together: t_mem = (active weight bytes + B · ctx · KV bytes) / (gpus · peak BW);
* compute: each output token costs at least 2 · active parameters FLOPs, and its share of the
  prompt (isl/osl tokens) as much again per token, at the PEAK dense tensor-core rate of the math
  precision: t_flop = 2 · N_active · B · (isl + osl)/osl / (gpus · peak FLOP/s);
* no communication, no kernel launches, no scheduler, no sampling.

Output tokens/s ≤ B / max(t_mem, t_flop): both times grow linearly with B, so the largest batch
memory holds is the best case. Attention FLOPs and every overhead are left out, which only raises
the bound.
"""

from __future__ import annotations

from vidya_lab import _validate as v
from vidya_lab.catalog import bytes_per_element, get_gpu, get_model, get_precision
from vidya_lab.sizing.latency import MAX_TOKENS
from vidya_lab.sizing.memory import default_kv_precision, kv_bytes_per_token, weights_bytes

#: Most GPUs one bound may describe.
MAX_BOUND_GPUS = 100_000


def physical_bound(model, gpu, *, gpus: int = 1, precision: str = "bf16",
                   kv_precision: str | None = None, isl: int = 1, osl: int = 1) -> dict:
    """The best case of serving ``model`` on ``gpus`` × ``gpu`` (module docstring), SI units.

    Returns ``output_tokens_per_s`` (all GPUs together), ``batch`` (sequences the memory holds,
    fractional), ``kv_bytes`` (memory left for KV, all GPUs), ``step_memory_s``,
    ``step_compute_s`` and ``limit`` ("memory" or "compute"). ``output_tokens_per_s`` is 0 when
    the weights alone exceed the GPUs' memory. Smaller isl/osl never lower the bound, so a row
    whose lengths are unknown is bounded with isl = osl = 1.
    """
    m, g = get_model(model), get_gpu(gpu)
    gpus = v.check_int("gpus", gpus, minimum=1, maximum=MAX_BOUND_GPUS)
    isl = v.check_int("isl", isl, minimum=1, maximum=MAX_TOKENS)
    osl = v.check_int("osl", osl, minimum=1, maximum=MAX_TOKENS)
    p = get_precision(precision).id
    kvp = get_precision(kv_precision, name="kv_precision").id if kv_precision is not None \
        else default_kv_precision(p)
    w = weights_bytes(m, p)
    kv_free = max(0.0, gpus * g.hbm_bytes - w)
    ctx = isl + osl / 2.0
    batch = kv_free / (kv_bytes_per_token(m, kvp) * ctx)
    out = {"output_tokens_per_s": 0.0, "batch": batch, "kv_bytes": kv_free,
           "step_memory_s": None, "step_compute_s": None, "limit": None}
    if batch <= 0:
        return out
    active = m.active_params_per_token()
    t_mem = (active * bytes_per_element(p) + batch * ctx * kv_bytes_per_token(m, kvp)) \
        / (gpus * g.hbm_bytes_per_s)
    t_flop = 2.0 * active * batch * (isl + osl) / osl / (gpus * g.flops_per_s(p))
    out.update(output_tokens_per_s=batch / max(t_mem, t_flop), step_memory_s=t_mem,
               step_compute_s=t_flop, limit="memory" if t_mem >= t_flop else "compute")
    return out


def roofline_output_tokens_per_s(model, gpu, *, gpus: int = 1, precision: str = "bf16",
                                 kv_precision: str | None = None, isl: int = 1,
                                 osl: int = 1) -> float:
    """Output tokens/s no engine can beat on ``gpus`` × ``gpu`` (:func:`physical_bound`)."""
    return physical_bound(model, gpu, gpus=gpus, precision=precision, kv_precision=kv_precision,
                          isl=isl, osl=osl)["output_tokens_per_s"]
