"""Every fleet size the book mentions, side by side, with one definition of utilisation.

Four answers to "how many GPUs?" appear in the book, and they differ for reasons a reader should be
able to state:

* chapter 2's calculator — one layout, the steady peak, every replica at the batch that just meets
  the TPOT target, a fixed share of its capacity kept free;
* chapter 3's layout search — the same arithmetic over every layout of one GPU type, the cheapest;
* chapter 6's simulated day — the fleet an autoscaling policy actually runs at the rush, replicas
  still starting included, aimed at a lower utilisation to ride out bursts;
* the capstone's plan — the GPU type, precision and spare capacity that survive a day busier than
  the forecast, with the prefix cache counted.

Utilisation is the same number in every row: the peak request rate the fleet must carry ÷ (replicas
× one replica's capacity), capacity being the rate a replica sustains at the TPOT target
(:func:`vidya_lab.sizing.capacity_rps`, the prefix cache counted where the plan counts it).
"""

from __future__ import annotations

from vidya_lab import autoscaling, layouts, sizing
from vidya_lab.scenario import TANVI, Scenario

#: Chapters 2 and 3 keep this share of a replica's capacity in use at the peak (20 % free).
CALCULATOR_UTILISATION = layouts.DEFAULT_UTILISATION


def _row(where: str, how: str, rep: sizing.Replica, replicas: int, rate: float,
         scenario: Scenario, why: str, cached: int = 0) -> dict:
    cap = sizing.capacity_rps(rep, scenario.prompt_tokens_mean, scenario.answer_tokens_mean,
                              scenario.tpot_target_s, cached_tokens=cached)
    return {"where": where, "method": how, "gpu": rep.gpu.id, "precision": rep.precision,
            "layout": f"TP{rep.tp}xPP{rep.pp}", "replicas": replicas, "gpus": replicas * rep.n_gpus,
            "peak_rps": rate, "capacity_rps_per_replica": cap,
            "utilisation_at_peak": rate / (replicas * cap) if replicas and cap else None,
            "why_it_differs": why}


def fleet_sizes(plan_result: dict | None = None, scenario: Scenario = TANVI, *, seed: int = 0) -> list[dict]:
    """The four fleet sizes (module docstring), each a dict: ``where``, ``method``, ``gpu``,
    ``precision``, ``layout``, ``replicas``, ``gpus``, ``peak_rps``, ``capacity_rps_per_replica``,
    ``utilisation_at_peak`` (the one definition) and ``why_it_differs``. ``plan_result`` is
    :func:`vidya_lab.plan.plan`'s result (the last row is left out without it)."""
    peak, isl, osl = scenario.exam_peak_rps, scenario.prompt_tokens_mean, scenario.answer_tokens_mean
    gpu = scenario.candidate_gpu_ids[0]
    ref = sizing.Replica(scenario.model_id, gpu, tp=layouts.reference_tp(scenario.model_id, gpu))
    calc = sizing.gpus_for_peak_load(ref, peak, isl, osl, tpot_slo_s=scenario.tpot_target_s,
                                     utilisation=CALCULATOR_UTILISATION)
    rows = [_row("chapter 2", "calculator: one layout, steady peak", ref, calc["replicas"], peak,
                 scenario, f"{CALCULATOR_UTILISATION:.0%} of capacity in use, no queue, no rush, "
                 "no time to start replicas")]
    best = layouts.cheapest_layout(scenario.model_id, gpu, peak_rps=peak, isl=isl, osl=osl,
                                   ttft_target_s=scenario.ttft_target_s,
                                   tpot_target_s=scenario.tpot_target_s,
                                   utilisation=CALCULATOR_UTILISATION)
    if best is not None:
        rep = sizing.Replica(scenario.model_id, gpu, tp=best.tp, pp=best.pp)
        rows.append(_row("chapter 3", "layout search: the cheapest (TP, PP) on one GPU type", rep,
                         best.replicas, peak, scenario,
                         "the same arithmetic as chapter 2, over every layout"))
    run = autoscaling.simulate_day(ref, day="exam", policy="scheduled", seed=seed, dt_s=10.0,
                                   max_replicas=256)
    rows.append(_row("chapter 6", "simulated exam day, scheduled scaling", ref,
                     int(run["summary"]["max_replicas"]), peak, scenario,
                     f"aims at {autoscaling.TARGET_UTILISATION:.0%} to absorb bursts, and counts the "
                     "replicas still starting at the rush"))
    if plan_result is not None:
        p = plan_result
        rep = sizing.Replica(scenario.model_id, p["gpu"], tp=p["tp"], pp=p["pp"],
                             precision=p["precision"])
        margin = 1.0 + p["traffic_margin"]
        rows.append(_row("capstone", f"plan: cheapest GPU type and precision that survive "
                         f"+{p['traffic_margin']:.0%} traffic in a simulated day", rep,
                         p["replicas_peak"], peak * margin, scenario,
                         f"another GPU type and precision, {p['spare_replicas']} spare replicas, "
                         f"the prefix cache counted ({p['prefix_cached_tokens']} tokens), sized for "
                         f"a day {p['traffic_margin']:.0%} busier than the forecast",
                         cached=p["prefix_cached_tokens"]))
    return rows
