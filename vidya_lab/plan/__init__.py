"""The capstone planner: Tanvi's answer to finance.

:func:`plan` answers the question the book opens with: *which GPUs, how many, in what layout, and
what will exam season cost?* It only composes the chapters' modules; read it in this order:

1. :mod:`~vidya_lab.plan.candidates` — chapter 3's layout search on every GPU type × precision at
   the forecast peak (the calculator).
2. :mod:`~vidya_lab.plan.confirm` — chapters 5-6: a simulated day the plan must survive, with
   traffic above the forecast by the chosen margin (default +20 %), trying lean utilisations first,
   then spare replicas.
3. :mod:`vidya_lab.procurement` — the month bought as finance buys it: a reserved baseline, an
   on-demand burst, optionally spot.
4. :mod:`~vidya_lab.plan.risks` — what can still go wrong, simulated or sourced.
5. :mod:`~vidya_lab.plan.reconcile` — every fleet size the book mentions, side by side, with one
   definition of utilisation, and why each differs.

The prefix cache is counted (chapter 4): a new replica warms the syllabus and every subject prompt
before its readiness check (a part of its cold start, :class:`vidya_lab.autoscaling.ColdStart`), so
every request finds those tokens cached; the cold-cache day is reported as a risk.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace

from vidya_lab import _validate as v
from vidya_lab import autoscaling, procurement, sizing
from vidya_lab.catalog import get_model
from vidya_lab.plan.candidates import (
    Candidate,
    candidates,
    cheapest_per_gpu,
    day_curve,
    peak_rps,
    target,
)
from vidya_lab.plan.confirm import (
    FAR_MISS,
    MAX_COLD_START_S,
    MAX_CONFIRMED_CANDIDATES,
    MAX_SPARE_REPLICAS,
    PLAN_DT_S,
    UTILISATIONS,
    Options,
    confirm,
    simulate,
)
from vidya_lab.plan.risks import EXTRA_BEYOND_MARGIN, assess, reading_pace_s
from vidya_lab.scenario import TANVI, Scenario
from vidya_lab.workload.seeding import MAX_ARRIVALS

#: Days in the billing month the monthly cost is quoted for (an assumption: a 30-day month).
DAYS_PER_MONTH = 30
#: The forecast error every plan must survive by default (+20 % traffic at the target).
DEFAULT_TRAFFIC_MARGIN = 0.2
#: Kept for readers of the earlier planner: the margin is now the confirmation's criterion.
RISK_TRAFFIC_FACTOR = 1.0 + DEFAULT_TRAFFIC_MARGIN + EXTRA_BEYOND_MARGIN
DAYS = autoscaling.DAYS
POLICIES = autoscaling.POLICIES

__all__ = ["Candidate", "DAYS", "DAYS_PER_MONTH", "DEFAULT_TRAFFIC_MARGIN", "FAR_MISS",
           "MAX_CONFIRMED_CANDIDATES", "MAX_SPARE_REPLICAS", "Options", "PLAN_DT_S", "POLICIES",
           "RISK_TRAFFIC_FACTOR", "UTILISATIONS", "candidates", "cheapest_per_gpu", "day_curve",
           "peak_rps", "plan", "prefix_tokens", "reading_pace_s", "simulate", "target", "what_if"]


def prefix_tokens(scenario: Scenario, share: float | None = None) -> int:
    """Prompt tokens every request finds in a warm replica's prefix cache: the syllabus and the
    subject prompt (``share`` of the mean prompt instead, if given), whole blocks only."""
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    if share is None:
        tokens = scenario.syllabus_prompt_tokens + scenario.subject_prompt_tokens
    else:
        tokens = int(v.check_fraction("prefix_share", share) * scenario.prompt_tokens_mean)
    return min(tokens, scenario.prompt_tokens_mean - 1) // 16 * 16


def _check(scenario, day, policy, cold_start_s, dt_s, spot_share) -> None:
    v.check_instance("scenario", scenario, Scenario)
    get_model(scenario.model_id)
    v.check_choice("day", day, DAYS)
    v.check_choice("policy", policy, POLICIES)
    if cold_start_s is not None:  # a start longer than the rush makes autoscaling moot
        v.check_real("cold_start_s", cold_start_s, minimum=0.0, maximum=MAX_COLD_START_S)
    v.check_real("dt_s", dt_s, minimum=0.1, maximum=60.0)
    v.check_fraction("spot_share", spot_share)


def _check_day_size(scenario: Scenario, opts: Options, risks: bool) -> None:
    """Refuse, by the peak rate, a day whose simulation would draw more than ``MAX_ARRIVALS``
    requests (the busiest day the plan simulates: the margin day, or the risk beyond it)."""
    factor = 1.0 + opts.traffic_margin + (EXTRA_BEYOND_MARGIN if risks else 0.0)
    expected = day_curve(scenario, opts.day, factor).expected_count(24 * 3600.0)
    v.check_work(f"planning for a peak of {peak_rps(scenario, opts.day):g} requests/s "
                 f"(normal_peak_rps = {scenario.normal_peak_rps:g})", expected, MAX_ARRIVALS,
                 unit="simulated requests in a day",
                 hint="lower the peak request rate; the simulator draws every request")


def _no_candidate(scenario: Scenario, gpu_ids, day: str) -> ValueError:
    return ValueError(
        f"no layout of {scenario.model_id} on {', '.join(gpu_ids or scenario.candidate_gpu_ids)} "
        f"meets TTFT <= {scenario.ttft_target_s} s and TPOT <= {scenario.tpot_target_s} s at "
        f"{peak_rps(scenario, day):g} requests/s; relax a target or add a GPU type")


def _not_confirmed(scenario: Scenario, opts: Options, confirmed: list) -> ValueError:
    best: dict = {}
    for c in confirmed:  # the best try of each layout
        key = f"{c['gpu']}/{c['precision']} TP{c['tp']}xPP{c['pp']}"
        best[key] = max(best.get(key, -1.0), c["attainment"] or 0.0)
    tried = "; ".join(f"{k}: at best {a:.3f}" for k, a in best.items())
    return ValueError(f"no candidate met the attainment target of {scenario.attainment_target:.0%} "
                      f"on its simulated {opts.day} day at +{opts.traffic_margin:.0%} traffic; "
                      f"tried: {tried}; relax a target, lower the margin or add a GPU type")


def _answer(cand: Candidate, scenario: Scenario, opts: Options, margin_run: dict,
            forecast_run: dict, utilisation: float, spare: int,
            purchase: procurement.PurchasePlan) -> dict:
    s, f = margin_run["summary"], forecast_run["summary"]
    rep = cand.replica()
    replicas_peak = int(s["max_replicas"])
    return {
        "gpu": cand.gpu, "gpus": replicas_peak * rep.n_gpus, "tp": rep.tp, "pp": rep.pp,
        "replicas_peak": replicas_peak, "monthly_cost": purchase.monthly_cost["total"],
        "ttft_s": s["ttft_s"], "tpot_s": s["tpot_s"], "attainment": s["attainment"],
        "precision": cand.precision, "day": opts.day, "policy": opts.policy,
        "traffic_margin": opts.traffic_margin, "headroom": spare, "spare_replicas": spare,
        "utilisation": utilisation, "cold_start_s": margin_run["cold_start_s"],
        "rush_attainment": s["rush_attainment"], "per_hour_attainment": s["per_hour_attainment"],
        "forecast_attainment": f["attainment"], "forecast_rush_attainment": f["rush_attainment"],
        "replicas_by_hour": forecast_run["replicas_by_hour"],
        "replicas_by_hour_at_margin": margin_run["replicas_by_hour"],
        "arrivals_by_hour": [h["arrived"] for h in forecast_run["hours"]],
        "gpu_hours_per_day": f["gpu_hours"], "daily_cost_on_demand": f["cost"],
        "daily_cost": purchase.monthly_cost["total"] / DAYS_PER_MONTH,
        "days_per_month": DAYS_PER_MONTH,
        "cost_per_hour_peak": sizing.cost_per_hour_usd(rep, replicas_peak),
        "arrived": s["arrived"], "rejected": s["rejected"],
        "layout_sized_replicas": cand.layout.replicas,
        "reserved_gpus": purchase.reserved_gpus,
        "on_demand_gpu_hours": purchase.on_demand_gpu_hours * DAYS_PER_MONTH,
        "monthly_cost_by_kind": purchase.monthly_cost,
        "monthly_cost_all_on_demand": purchase.monthly_cost_all_on_demand,
        "purchase": purchase.as_dict(),
        "prefix_cache_counted": opts.cached_prefix_tokens > 0,
        "prefix_cached_tokens": opts.cached_prefix_tokens,
        "extrapolated": rep.extrapolated, "calibration": rep.calibration.name,
    }


def plan(scenario: Scenario = TANVI, *, gpu_ids=None, precisions=("bf16", "fp8"),
         day: str = "exam", policy: str = "scheduled", cold_start_s: float | None = None,
         prefix_share: float | None = None, count_prefix_cache: bool = True,
         traffic_margin: float = DEFAULT_TRAFFIC_MARGIN, spot_share: float = 0.0, seed: int = 0,
         dt_s: float = PLAN_DT_S, risks: bool = True, calibration=None) -> dict:
    """Plan the fleet for ``scenario`` (default: Tanvi's, exactly as the book states it).

    Parameters
    ----------
    scenario : the givens (model, candidate GPUs, traffic, lengths, SLO); see
        :class:`vidya_lab.scenario.Scenario` and :func:`what_if`.
    gpu_ids, precisions : GPU types and weight precisions to consider (fp8 skipped where absent).
    day : ``"exam"`` or ``"normal"``: the day the fleet is planned for.
    policy : the autoscaling policy: ``"scheduled"``, ``"predictive"`` or ``"reactive"``.
    cold_start_s : seconds from "scale up" to serving; ``None``: the sourced parts of
        :class:`vidya_lab.autoscaling.ColdStart` (prefix warm-up included).
    prefix_share : share of the mean prompt a warm replica finds cached (``None``: the syllabus and
        the subject prompt); ``count_prefix_cache=False`` plans as if nothing were cached.
    traffic_margin : the forecast error the plan must survive at the attainment target (0.2: a
        day 20 % busier than forecast); the policy still plans for the forecast.
    spot_share : share of the on-demand burst bought as spot (0: none; spot can be taken back).
    seed, dt_s : the simulated day's seed and time step (s).
    risks : also simulate the risks (traffic beyond the margin, reactive scaling, a cold cache).
    calibration : a :class:`vidya_lab.sizing.Calibration` (None: the published fit).

    Returns
    -------
    dict, JSON-ready. Contract keys: ``gpu``, ``gpus`` (GPUs at the peak of the margin day: peak
    replicas × tp × pp), ``tp``, ``pp``, ``replicas_peak``, ``monthly_cost`` (USD, the purchase
    mix), ``ttft_s`` and ``tpot_s`` (percentiles, seconds), ``attainment`` (0..1, on the margin
    day). Also ``spare_replicas``, ``reserved_gpus``, ``on_demand_gpu_hours`` (per month),
    ``monthly_cost_by_kind``, ``prefix_cache_counted``, ``extrapolated``, the forecast day's
    figures, ``candidates``, ``confirmed``, ``prefix_cache``, ``risks``, ``fleet_sizes``,
    ``scenario`` and ``wall_s``. Raises ``ValueError`` when no candidate meets the targets.
    """
    t0 = time.perf_counter()
    _check(scenario, day, policy, cold_start_s, dt_s, spot_share)
    v.check_bool("count_prefix_cache", count_prefix_cache)
    v.check_bool("risks", risks)
    cached = prefix_tokens(scenario, prefix_share) if count_prefix_cache else 0
    opts = Options(day=day, policy=policy, cold_start_s=cold_start_s, cached_prefix_tokens=cached,
                   traffic_margin=traffic_margin, seed=v.check_int("seed", seed, minimum=0),
                   dt_s=dt_s)
    _check_day_size(scenario, opts, risks)
    ranked = candidates(scenario, gpu_ids=gpu_ids, precisions=tuple(precisions), day=day,
                        calibration=calibration, cached_tokens=cached)
    if not ranked:
        raise _no_candidate(scenario, gpu_ids, day)
    chosen, margin_run, confirmed = confirm(ranked, scenario, opts)
    if chosen is None:
        raise _not_confirmed(scenario, opts, confirmed)
    cand, utilisation, spare = chosen
    forecast_run = simulate(cand, scenario, opts, utilisation=utilisation, headroom=spare,
                            fidelity="fluid")  # the bill's replica curve: replicas, not requests
    purchase = procurement.buy(forecast_run["replicas_by_hour"], gpus_per_replica=cand.layout.tp
                               * cand.layout.pp, gpu=cand.gpu, days=DAYS_PER_MONTH,
                               spot_share=spot_share)
    result = _answer(cand, scenario, opts, margin_run, forecast_run, utilisation, spare, purchase)
    result["candidates"] = [c.as_dict() for c in cheapest_per_gpu(ranked)]
    result["confirmed"] = confirmed
    result["prefix_cache"] = _prefix_ttft(cand.replica(), scenario, cached)
    result["scenario"] = {k: (list(x) if isinstance(x, tuple) else x)
                          for k, x in asdict(scenario).items() if k != "notes"}
    if risks:
        result["risks"] = assess(cand, scenario, opts, utilisation=utilisation, spare=spare,
                                 purchase=purchase)
    result["wall_s"] = time.perf_counter() - t0
    return result


def _prefix_ttft(rep: sizing.Replica, scenario: Scenario, cached: int) -> dict:
    """TTFT of one mean prompt on an idle replica, cold cache and warm."""
    from vidya_lab import caching

    isl = scenario.prompt_tokens_mean
    k = cached if cached else prefix_tokens(scenario)
    return {"cached_tokens": k, "ttft_s_cold_cache": sizing.ttft_s(rep, isl),
            "ttft_s_warm_cache": caching.ttft_with_cache_s(rep, isl, k)}


def what_if(scenario: Scenario = TANVI, **changes) -> Scenario:
    """The scenario with some givens changed: ``what_if(exam_multiplier=12)``; names are checked."""
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    fields = set(Scenario.__dataclass_fields__)
    unknown = sorted(set(changes) - fields)
    if unknown:
        raise ValueError(f"unknown scenario field(s) {unknown}; known: {sorted(fields)}")
    return replace(scenario, **changes)
