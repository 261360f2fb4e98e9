"""Every fleet size the book states, side by side, with one definition of utilisation — and the
gap between chapter 2's first answer and the capstone's, decomposed into named factors.

The book answers "how many GPUs?" several times, and each answer differs for a reason a reader
should be able to state (:func:`fleet_sizes`):

* chapter 2 — one layout (H100, bf16, chapter 3's tensor parallelism), no prefix cache, sized with
  the tail: at the busiest utilisation whose p99 holds in the iteration-level simulator
  (:func:`~vidya_lab.plan.tail.tail_replicas`);
* chapter 3 — the cheapest layout of the same GPU by the calculator at 80 % of capacity (a mean);
* chapter 4 — the same replica with the prefix cache counted, at 100 % (no spare);
* chapter 5 — colocated replicas with the stall-free token budget, and disaggregated pools, cache
  counted, planned at the calculator's utilisation;
* chapter 6 — the simulated exam day under the schedule (replicas still starting and draining
  counted), and prefix-aware routing's fleet at the rush;
* the capstone — another GPU type and precision, the cache a salt per school leaves, the ITL token
  budget, a day 20 % busier than the forecast, and spares that survive losing a node at its peak.

Utilisation is the same number in every row: the peak request rate the fleet carries ÷ (replicas ×
one replica's capacity), capacity being the rate a replica sustains at the TPOT target
(:func:`vidya_lab.sizing.capacity_rps`, with the row's cache and token budget).

:func:`factors` explains the gap between the first and the last row as a chain: each factor changes
one thing, and capstone GPUs ≈ chapter 2 GPUs × the product of the factors (per-GPU capacity ratios
from the calculator, then the fleet's replica model, utilisation, the schedule's margin, rounding
to whole replicas and the spares); ``residual`` is what the chain leaves unexplained (the simulated
day's fleet against the fluid day's), within 10 % by a test.
"""

from __future__ import annotations

import math

from vidya_lab import admission, autoscaling, caching, layouts, sizing
from vidya_lab.plan import isolation as iso
from vidya_lab.plan.search import POLICY_MARGIN
from vidya_lab.plan.tail import tail_replicas
from vidya_lab.scenario import TANVI, Scenario

#: Chapter 3's calculator keeps this share of a replica's capacity in use at the peak (20 % free).
CALCULATOR_UTILISATION = layouts.DEFAULT_UTILISATION
#: Chapter 6's routing study: requests of the trace, its seed and its turns per conversation.
ROUTING_REQUESTS, ROUTING_SEED, ROUTING_TURNS = 6000, 4, 4


def _cap(rep: sizing.Replica, scenario: Scenario, cached: int = 0) -> float:
    return sizing.capacity_rps(rep, scenario.prompt_tokens_mean, scenario.answer_tokens_mean,
                               scenario.tpot_target_s, cached_tokens=cached)


def _row(where: str, how: str, rep: sizing.Replica, replicas: int, rate: float,
         scenario: Scenario, why: str, cached: int = 0, capacity: float | None = None) -> dict:
    cap = _cap(rep, scenario, cached) if capacity is None else capacity
    return {"where": where, "method": how, "gpu": rep.gpu.id, "precision": rep.precision,
            "layout": f"TP{rep.tp}xPP{rep.pp}", "replicas": replicas, "gpus": replicas * rep.n_gpus,
            "peak_rps": rate, "capacity_rps_per_replica": cap, "cached_tokens": cached,
            "utilisation_at_peak": rate / (replicas * cap) if replicas and cap else None,
            "why_it_differs": why}


def reference_replica(scenario: Scenario = TANVI) -> sizing.Replica:
    """Chapter 2's replica: the first candidate GPU, bf16, chapter 3's tensor parallelism."""
    gpu = scenario.candidate_gpu_ids[0]
    return sizing.Replica(scenario.model_id, gpu, tp=layouts.reference_tp(scenario.model_id, gpu))


def _early_rows(scenario: Scenario) -> list[dict]:
    peak, isl, osl = scenario.exam_peak_rps, scenario.prompt_tokens_mean, scenario.answer_tokens_mean
    ref = reference_replica(scenario)
    t = tail_replicas(ref, peak, scenario)
    rows = [_row("chapter 2", "one layout, sized with the tail (iteration-level simulator)", ref,
                 t["replicas"], peak, scenario,
                 f"no prefix cache; the p99 holds up to {t['utilisation']:.0%} of capacity, not "
                 "at the mean's full capacity")]
    best = layouts.cheapest_layout(scenario.model_id, ref.gpu.id, peak_rps=peak, isl=isl, osl=osl,
                                   ttft_target_s=scenario.ttft_target_s,
                                   tpot_target_s=scenario.tpot_target_s,
                                   utilisation=CALCULATOR_UTILISATION)
    if best is not None:
        rep = sizing.Replica(scenario.model_id, ref.gpu.id, tp=best.tp, pp=best.pp)
        rows.append(_row("chapter 3", "layout search: the cheapest (TP, PP), the calculator at "
                         f"{CALCULATOR_UTILISATION:.0%}", rep, best.replicas, peak, scenario,
                         f"a steady mean against the target at {CALCULATOR_UTILISATION:.0%}: the "
                         "tail is missed (chapter 2)"))
    shared = iso.shared_prefix_tokens(scenario)
    _, with_ = caching.capacity_with_cache(ref, shared, isl, osl, scenario.tpot_target_s, peak)
    rows.append(_row("chapter 4", "the prefix cache counted (one cache shared), sized at full "
                     "capacity",
                     ref, with_["replicas_for_peak"], peak, scenario,
                     f"{shared:,} of {isl:,} prompt tokens cached; no spare, no isolation",
                     cached=shared))
    pays = admission.when_it_pays(ref, peak, isl, osl, scenario.ttft_target_s,
                                  scenario.tpot_target_s, shared,
                                  utilisation=CALCULATOR_UTILISATION)  # as chapter 5 plans them
    sf = pays["colocated_stall_free"]
    sf_rep = sizing.Replica(scenario.model_id, ref.gpu.id, tp=ref.tp, max_batched_tokens=sf["budget"])
    rows.append(_row("chapter 5", f"colocated, stall-free token budget ({sf['budget']:,}), cache "
                     "counted", sf_rep, sf["replicas"], peak, scenario,
                     f"no gap longer than the TPOT target; planned at {CALCULATOR_UTILISATION:.0%}",
                     cached=shared))
    dis = pays["disaggregated"]
    rows.append({**_row("chapter 5", "disaggregated prefill and decode pools, cache counted", ref,
                        dis["gpus"] // ref.n_gpus, peak, scenario,
                        f"two pools, each sized for its own target (decode at "
                        f"{CALCULATOR_UTILISATION:.0%})", cached=shared),
                 "gpus": dis["gpus"], "utilisation_at_peak": None})
    return rows


def _chapter6_rows(scenario: Scenario, seed: int) -> list[dict]:
    ref = reference_replica(scenario)
    # the fluid fleet: the same replica counts as chapter 6's request-level day (a test pins it),
    # in a fraction of the time
    run = autoscaling.simulate_day(ref, day="exam", policy="scheduled", seed=seed, dt_s=10.0,
                                   max_replicas=256, fidelity="fluid")
    rows = [_row("chapter 6", "simulated exam day, scheduled scaling", ref,
                 int(run["summary"]["max_replicas"]), scenario.exam_peak_rps, scenario,
                 f"aims at {autoscaling.TARGET_UTILISATION:.0%} to absorb bursts, and counts the "
                 "replicas still starting at the rush")]
    model = autoscaling.replica_model(ref)
    rate = float(autoscaling.day_profile("exam").rate_per_s([scenario.rush_hour * 3600.0])[0])
    n = autoscaling.replicas_for_rate(rate, model)
    trace = caching.tutor_trace(ROUTING_REQUESTS, seed=ROUTING_SEED, turns_mean=ROUTING_TURNS,
                                rate_per_s=rate)
    routed = autoscaling.replay_routed(trace, ref, n, "prefix_aware")
    cap = autoscaling.routed_capacity(ref, routed, prompt_tokens=routed.prompt_tokens_mean,
                                      answer_tokens=routed.answer_tokens_mean,
                                      tpot_target_s=scenario.tpot_target_s)
    reps = math.ceil(scenario.exam_peak_rps * routed.busiest_share
                     / (cap * autoscaling.TARGET_UTILISATION))
    rows.append(_row("chapter 6", "prefix-aware routing at the exam peak, the busiest replica at "
                     f"{autoscaling.TARGET_UTILISATION:.0%}", ref, reps, scenario.exam_peak_rps,
                     scenario, f"the cache follows conversations ({routed.cached_tokens_mean:,.0f} "
                     "tokens a request cached, histories included); no isolation",
                     cached=int(routed.shared_cached_tokens_mean), capacity=cap))
    return rows


def capstone_replica(plan_result: dict, scenario: Scenario = TANVI) -> sizing.Replica:
    """The plan's replica as it runs (its token budget)."""
    p = plan_result
    return sizing.Replica(scenario.model_id, p["gpu"], tp=p["tp"], pp=p["pp"],
                          precision=p["precision"], max_batched_tokens=p["budget_tokens"])


def fleet_sizes(plan_result: dict | None = None, scenario: Scenario = TANVI, *, seed: int = 0,
                simulated: bool = True) -> list[dict]:
    """The book's fleet sizes (module docstring), each a dict: ``where``, ``method``, ``gpu``,
    ``precision``, ``layout``, ``replicas``, ``gpus``, ``peak_rps``, ``capacity_rps_per_replica``,
    ``cached_tokens``, ``utilisation_at_peak`` (the one definition; None for two pools) and
    ``why_it_differs``. ``plan_result`` is :func:`vidya_lab.plan.plan`'s result (the last row is
    left out without it); ``simulated=False`` leaves out chapter 6's rows (simulations)."""
    rows = _early_rows(scenario)
    if simulated:
        rows += _chapter6_rows(scenario, seed)
    if plan_result is not None:
        p = plan_result
        rep = capstone_replica(p, scenario)
        rows.append(_row("capstone", "plan: the cheapest GPU type, precision and spares meeting "
                         "every constraint, simulated", rep, p["replicas_peak"],
                         scenario.exam_peak_rps * (1.0 + p["traffic_margin"]), scenario,
                         f"{p['gpu']} {p['precision']}, a salt per school "
                         f"({p['prefix_cached_tokens']:,} tokens cached), a {p['budget_tokens']:,}"
                         f"-token budget for the ITL target, a day {p['traffic_margin']:.0%} "
                         f"busier, {p['spares_by_failure']['node']} spare replicas at the peak "
                         "against losing a node", cached=p["prefix_cached_tokens"]))
    return rows


def _per_gpu(rep: sizing.Replica, scenario: Scenario, cached: int) -> float:
    return _cap(rep, scenario, cached) / rep.n_gpus


def factors(plan_result: dict, scenario: Scenario = TANVI) -> dict:
    """The chain from chapter 2's GPUs to the capstone's (module docstring).

    Returns ``chapter2_gpus``, ``capstone_gpus``, ``ratio`` (capstone ÷ chapter 2), ``factors``
    (each ``name``, ``factor`` — the multiplier of the GPU count — and ``why``), ``product``
    and ``residual`` (ratio ÷ product).
    """
    from vidya_lab.plan.confirm import _model

    p = plan_result
    ref = reference_replica(scenario)
    t = tail_replicas(ref, scenario.exam_peak_rps, scenario)
    shared, k = iso.shared_prefix_tokens(scenario), p["prefix_cached_tokens"]
    fp = sizing.Replica(scenario.model_id, ref.gpu.id, precision=p["precision"],
                        tp=layouts.reference_tp(scenario.model_id, ref.gpu.id, p["precision"]))
    plain = sizing.Replica(scenario.model_id, p["gpu"], tp=p["tp"], pp=p["pp"],
                           precision=p["precision"])
    rep = capstone_replica(p, scenario)
    fleet = _model(rep, scenario, k, p["prefix_cache_isolation"]["resident_prefix_tokens"] or None)
    need, peak = p["replicas_needed_at_peak"], p["replicas_at_peak"]
    exact = scenario.exam_peak_rps * (1 + POLICY_MARGIN) / (fleet.capacity_rps()
                                                           * p["utilisation_holding"])
    chain = [
        ("prefix cache", _per_gpu(ref, scenario, 0) / _per_gpu(ref, scenario, shared),
         f"{shared:,} of {scenario.prompt_tokens_mean:,} prompt tokens cached (chapter 4)"),
        ("isolation", _per_gpu(ref, scenario, shared) / _per_gpu(ref, scenario, k),
         f"a salt per school leaves {k:,} cached (chapter 4's replay)"),
        ("precision", _per_gpu(ref, scenario, k) / _per_gpu(fp, scenario, k),
         f"{p['precision']} weights and KV on {ref.gpu.id} (chapter 4)"),
        ("GPU type", _per_gpu(fp, scenario, k) / _per_gpu(plain, scenario, k),
         f"{p['gpu']} at TP{p['tp']} instead of {ref.gpu.id} at TP{fp.tp}"),
        ("token budget", _per_gpu(plain, scenario, k) / _per_gpu(rep, scenario, k),
         f"{p['budget_tokens']:,} tokens an iteration, for the ITL target (chapter 5)"),
        ("fleet model", _cap(rep, scenario, k) / fleet.capacity_rps(),
         "the fleet's replica model (prefill queue, resident prefixes) against the calculator"),
        ("utilisation", t["utilisation_at_peak"] / p["utilisation_holding"],
         f"chapter 2 runs at {t['utilisation_at_peak']:.0%}; the capstone's fleet holds the "
         f"+{p['traffic_margin']:.0%} day aimed at {p['utilisation_holding']:.0%}"),
        ("schedule margin", 1 + POLICY_MARGIN,
         f"the schedule sizes each hour's busiest minute {POLICY_MARGIN:.0%} above the forecast "
         "(chapter 6)"),
        ("rounding", need / exact, "whole replicas"),
        ("spares", peak / need, f"{peak - need} replicas at the peak against losing a node"),
    ]
    product = math.prod(f for _, f, _ in chain)
    ratio = p["gpus"] / t["gpus"]
    return {"chapter2_gpus": t["gpus"], "capstone_gpus": p["gpus"], "ratio": ratio,
            "factors": [{"name": n, "factor": f, "why": w} for n, f, w in chain],
            "product": product, "residual": ratio / product}
