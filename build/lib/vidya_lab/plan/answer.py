"""Step 6 of the plan: the answer, as one JSON-ready dict (the keys :func:`vidya_lab.plan.plan`
documents), from the search's winner and the simulations that confirm it."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from vidya_lab import sizing
from vidya_lab.plan.candidates import Candidate
from vidya_lab.plan.confirm import Options
from vidya_lab.plan.failures import failure_domain
from vidya_lab.scenario import Scenario

#: Days in the billing month the monthly costs are quoted for (an assumption: a 30-day month).
DAYS_PER_MONTH = 30


def _p99(x) -> float | None:
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    return float(np.percentile(x, 99)) if x.size else None


def _latency(margin_run: dict, scenario: Scenario, busiest: dict) -> dict:
    s, run = margin_run["summary"], margin_run["run"]
    return {"ttft_s": s["ttft_s"], "tpot_s": s["tpot_s"], "attainment": s["attainment"],
            "itl_p99_s": busiest["itl_p99_s"], "itl_target_s": scenario.itl_target_s,
            "itl_max_s": busiest["itl_max_s"],
            "longest_gap_p99_s": _p99(run.longest_gap_s),
            "busiest_replica": busiest}


def _finance(year, exam_curve: list, cand: Candidate) -> dict:
    m = year.monthly_cost_exam
    per = cand.gpus_per_replica
    on_demand_hours = DAYS_PER_MONTH * year.on_demand_gpu_hours_exam_day
    return {
        "monthly_cost": m["total"], "monthly_cost_by_kind": m,
        "monthly_cost_exam": m["total"], "monthly_cost_normal": year.monthly_cost_normal["total"],
        "monthly_cost_exam_by_kind": m, "monthly_cost_normal_by_kind": year.monthly_cost_normal,
        "yearly_cost": year.yearly_cost["total"], "yearly_cost_by_kind": year.yearly_cost,
        "yearly_cost_all_on_demand": year.yearly_cost_all_on_demand,
        "monthly_cost_all_on_demand": DAYS_PER_MONTH * sum(exam_curve) * per
        * sizing.get_gpu(cand.gpu).price_per_hour_usd,
        "daily_cost": m["total"] / DAYS_PER_MONTH, "days_per_month": DAYS_PER_MONTH,
        "reserved_gpus": year.reserved_gpus, "on_demand_gpu_hours": on_demand_hours,
        "instance_gpus": year.instance_gpus, "purchase": year.as_dict(),
        "reserved_basis": {
            "curve": f"a year of {year.exam_days} exam days and {year.normal_days} normal days, "
                     "each the forecast day's replicas hour by hour (the fluid fleet)",
            "exam_days": year.exam_days, "normal_days": year.normal_days,
            "reserved_ratio": year.reserved_ratio, "threshold_hours": year.threshold_hours,
            "hours_in_service_by_instance": year.hours_in_service,
            "reserved_instances": year.reserved_instances, "instance_gpus": year.instance_gpus,
            "sources": year.sources},
    }


def answer(best: dict, scenario: Scenario, opts: Options, margin_run: dict,
           busiest: dict) -> dict:
    """The plan's dict (the keys of :func:`vidya_lab.plan.plan`, less ``candidates``,
    ``confirmed``, ``alternatives``, ``risks``, ``scenario`` and ``wall_s``, which it adds)."""
    cand = best["candidate"]
    rep = cand.replica()
    s = margin_run["summary"]
    forecast = best["bill"]["exam"]
    year = best["bill"]["year"]
    f = forecast["summary"]
    replicas_peak = int(s["max_replicas"])
    node, one = best["node_loss"], best["replica_loss"]
    return {
        "gpu": cand.gpu, "gpus": replicas_peak * rep.n_gpus, "tp": rep.tp, "pp": rep.pp,
        "replicas_peak": replicas_peak, **_latency(margin_run, scenario, busiest),
        "precision": cand.precision, "day": opts.day, "policy": opts.policy,
        "traffic_margin": opts.traffic_margin, "headroom": best["spares"],
        "spare_replicas": best["spares"], "spares_by_failure": best["spares_by_failure"],
        "replicas_needed_at_peak": best["replicas_needed_at_peak"],
        "replicas_at_peak": best["replicas_at_peak"],
        "failure_domain": failure_domain(cand)["gpus_per_node"],
        "replicas_per_failure_domain": failure_domain(cand)["replicas_per_node"],
        "node_loss_attainment": node["attainment"], "replica_loss_attainment": one["attainment"],
        "node_loss": node, "replica_loss": one,
        "utilisation": best["utilisation"], "utilisation_holding": best["utilisation_holding"],
        "cold_start_s": margin_run["cold_start_s"],
        "rush_attainment": s["rush_attainment"], "per_hour_attainment": s["per_hour_attainment"],
        "forecast_attainment": f["attainment"], "forecast_rush_attainment": f["rush_attainment"],
        "replicas_by_hour": forecast["replicas_by_hour"],
        "replicas_by_hour_normal": best["bill"]["normal"]["replicas_by_hour"],
        "replicas_by_hour_at_margin": margin_run["replicas_by_hour"],
        "arrivals_by_hour": [h["arrived"] for h in margin_run["hours"]],
        "gpu_hours_per_day": f["gpu_hours"], "daily_cost_on_demand": f["cost"],
        **_finance(year, forecast["replicas_by_hour"], cand),
        "cost_per_hour_peak": sizing.cost_per_hour_usd(rep, replicas_peak),
        "arrived": s["arrived"], "rejected": s["rejected"],
        "layout_sized_replicas": cand.layout.replicas,
        "calculator_replicas": cand.calculator["replicas"],
        "budget_tokens": rep.max_batched_tokens,
        "batch_per_replica": cand.calculator["batch_per_replica"],
        "kv_limited_batch_with_cache": sizing.saturated_throughput(
            rep, scenario.prompt_tokens_mean, scenario.answer_tokens_mean,
            cand.cached_tokens)["batch"],
        "isolation": cand.cache["isolation"] if cand.cache else "none (cache not counted)",
        "prefix_cache_isolation": cand.cache,
        "prefix_cache_counted": cand.cached_tokens > 0, "prefix_cached_tokens": cand.cached_tokens,
        "extrapolated": rep.extrapolated, "calibration": rep.calibration.name,
    }


def scenario_dict(scenario: Scenario) -> dict:
    """The scenario's givens, JSON-ready (the notes left out)."""
    return {k: (list(x) if isinstance(x, tuple) else x)
            for k, x in asdict(scenario).items() if k != "notes"}
