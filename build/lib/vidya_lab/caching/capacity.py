"""What the prefix cache is worth in capacity, and what each number format is worth with it.

A warm replica finds the syllabus and the subject prompt of every request in its prefix cache (it
warms them before its readiness check, chapter 6), so a prompt prefills only its uncached suffix
and a running sequence holds only its own KV. The planner counts this
(:func:`vidya_lab.plan.prefix_tokens`), and so do both definitions of a replica's capacity: the
calculator's saturated cycle (:func:`vidya_lab.sizing.capacity_rps` with ``cached_tokens``) and the
fleet's coarse replica model (:func:`vidya_lab.autoscaling.replica_model` with
``cached_prefix_tokens``), which agree within 6 %. Utilisation everywhere in the book is offered
requests/s ÷ (replicas × that capacity).

:func:`capacity_with_cache` puts the two side by side for one replica, with and without the cache;
:func:`capacity_by_precision` does it for several (GPU, weight format, KV format) choices, each on
the book's reference layout for that format, with the replicas and the hourly bill of a peak.
"""

from __future__ import annotations

import math

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.caching.deployment import default_replica
from vidya_lab.caching.savings import ttft_with_cache_s
from vidya_lab.scenario import TANVI

#: The (GPU, weight precision, KV precision) choices chapter 4 compares: Hopper in 16 and 8 bits,
#: Blackwell in 8 and 4 (NVFP4 weights, FP8 or NVFP4 KV).
PRECISION_OPTIONS = (("h100-sxm", "bf16", "bf16"), ("h100-sxm", "fp8", "fp8"),
                     ("b200", "fp8", "fp8"), ("b200", "fp4", "fp8"), ("b200", "fp4", "fp4"))


def _fleet_capacity(r: sizing.Replica, isl: int, osl: int, tpot: float, k: int) -> float:
    from vidya_lab.autoscaling import replica_model  # above caching in the house; imported late

    return replica_model(r, prompt_tokens_mean=isl, output_tokens_mean=osl, tpot_target_s=tpot,
                         cached_prefix_tokens=k).capacity_rps()


def capacity_with_cache(r: sizing.Replica, cached_tokens: int, isl: int = TANVI.prompt_tokens_mean,
                        osl: int = TANVI.answer_tokens_mean,
                        tpot_target_s: float = TANVI.tpot_target_s,
                        peak_rps: float = TANVI.exam_peak_rps) -> list[dict]:
    """One replica's capacity (requests/s at the TPOT target) without and with ``cached_tokens`` of
    every prompt in its prefix cache.

    Two rows (cached 0, then ``cached_tokens``), each with ``cached_tokens``,
    ``prefill_tokens_per_request`` (isl − cached), ``kv_tokens_per_sequence`` (isl + osl − cached:
    the cached blocks are shared), ``batch`` (:func:`~vidya_lab.sizing.slo_batch`),
    ``capacity_rps`` (the calculator), ``fleet_capacity_rps`` (the fleet's replica model) and
    ``replicas_for_peak`` (ceil(peak ÷ capacity): at 100 % utilisation, no spare).
    """
    sizing._as_replica(r)
    isl = v.check_int("isl", isl, minimum=1)
    osl = v.check_int("osl", osl, minimum=1)
    k = v.check_cached_tokens(cached_tokens, isl)
    tpot = v.check_real("tpot_target_s", tpot_target_s, minimum=0.0, min_inclusive=False)
    peak = v.check_real("peak_rps", peak_rps, minimum=0.0, min_inclusive=False, maximum=1e7)
    rows = []
    for cached in (0, k):
        cap = sizing.capacity_rps(r, isl, osl, tpot, cached_tokens=cached)
        rows.append({"cached_tokens": cached, "prefill_tokens_per_request": isl - cached,
                     "kv_tokens_per_sequence": isl + osl - cached,
                     "batch": sizing.slo_batch(r, isl, osl, tpot, cached), "capacity_rps": cap,
                     "fleet_capacity_rps": _fleet_capacity(r, isl, osl, tpot, cached),
                     "replicas_for_peak": math.ceil(peak / cap) if cap > 0 else None})
    return rows


def capacity_by_precision(options=PRECISION_OPTIONS, model: str = TANVI.model_id,
                          cached_tokens: int = 0, isl: int = TANVI.prompt_tokens_mean,
                          osl: int = TANVI.answer_tokens_mean,
                          tpot_target_s: float = TANVI.tpot_target_s,
                          peak_rps: float = TANVI.exam_peak_rps) -> list[dict]:
    """Capacity and the peak's bill for each (GPU, weight precision, KV precision) in ``options``.

    Each replica is the book's reference layout for its weight format
    (:func:`~vidya_lab.caching.default_replica`) with the KV format given. Rows: ``gpu``,
    ``precision``, ``kv_precision``, ``tp``, ``weights_bytes_per_gpu``, ``ttft_s`` (idle, the
    uncached suffix), ``capacity_rps`` (with ``cached_tokens`` cached), ``replicas_for_peak``,
    ``gpus_for_peak`` and ``usd_per_hour`` (catalog on-demand price × GPUs). Quality is not here:
    fewer bits can change answers (the chapter cites the published accuracy evidence).
    """
    if isinstance(options, (str, bytes)) or not hasattr(options, "__iter__"):
        raise TypeError(f"options must be a sequence of (gpu, precision, kv_precision) triples, got "
                        f"{type(options).__name__}")
    peak = v.check_real("peak_rps", peak_rps, minimum=0.0, min_inclusive=False, maximum=1e7)
    k = v.check_cached_tokens(cached_tokens, v.check_int("isl", isl, minimum=1))
    rows = []
    for i, opt in enumerate(options):
        if not isinstance(opt, (tuple, list)) or len(opt) != 3:
            raise TypeError(f"options[{i}] must be a (gpu, precision, kv_precision) triple, got {opt!r}")
        gpu, prec, kvp = opt
        base = default_replica(model, gpu, prec)
        r = sizing.Replica(base.model, base.gpu, tp=base.tp, precision=prec, kv_precision=kvp)
        cap = sizing.capacity_rps(r, isl, osl, tpot_target_s, cached_tokens=k)
        n = math.ceil(peak / cap) if cap > 0 else None
        rows.append({"gpu": r.gpu.id, "precision": r.precision, "kv_precision": r.kv_precision,
                     "tp": r.tp, "weights_bytes_per_gpu": r.weights_bytes_per_gpu,
                     "ttft_s": ttft_with_cache_s(r, isl, k), "capacity_rps": cap,
                     "replicas_for_peak": n, "gpus_for_peak": None if n is None else n * r.n_gpus,
                     "usd_per_hour": None if n is None else sizing.cost_per_hour_usd(r, n)})
    return rows
