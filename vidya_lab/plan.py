"""The capstone planner: Tanvi's answer to finance.

:func:`plan` answers the question the book opens with: *which GPUs, how many, in what layout, and
what will exam season cost?* It only composes the chapters' modules; it computes nothing of its own:

1. **Layouts** (chapter 3, :func:`vidya_lab.layouts.search_layouts`): for every candidate GPU type and
   precision, the cheapest (TP, PP, replicas) layout whose replicas fit in memory (chapter 2) and meet
   the TTFT and TPOT targets at the peak load, sized by the cost model and Little's law.
2. **Confirmation** (chapters 5–6, :func:`vidya_lab.autoscaling.simulate_day`): the cheapest candidate
   is run through a simulated day of the forecast traffic under the chosen autoscaling policy and
   the derived cold start, with the policy aiming its replicas at the busiest utilisation of
   :data:`UTILISATIONS` first (fewest replicas), then lower ones. If it still misses the target
   narrowly, one spare replica (N+1) is added, then a second; if it still misses (or missed
   widely), the next-cheapest candidate is tried. The first that meets the target is the plan, so the plan is the cheapest of the
   candidates the planner confirmed. The calculator and the simulation can disagree (the
   calculator assumes every replica runs at its best batch; the simulated day has queues, a
   router and scale-up delays): the simulation has the last word.
3. **Risks**: the same fleet and policy on a day with traffic 20 % above the forecast (what breaks
   first: TTFT, TPOT or admission), and the 7 am rush under a purely reactive autoscaler with the
   derived cold start (what happens if the schedule is forgotten).

Capacity is sized *without* counting on the prefix cache (chapter 4): replicas started during the
rush begin with an empty cache, exactly when the load is highest. The prefix share is reported as
the TTFT it saves on a warm replica, and as the headroom it gives in practice.

Money: GPU-hours × the catalog's rental price (an assumption stated in :mod:`vidya_lab.catalog`),
and a month is :data:`DAYS_PER_MONTH` days of the planned day type.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace

from vidya_lab import _validate as v
from vidya_lab import autoscaling, layouts, sizing, slo
from vidya_lab.catalog import get_gpu, get_model
from vidya_lab.scenario import TANVI, Scenario
from vidya_lab.workload import student_day_profile

#: Days in the billing month the monthly cost is quoted for (an assumption: a 30-day month).
DAYS_PER_MONTH = 30
#: Traffic above the forecast that the risk section tries (the "20 % above forecast" question).
RISK_TRAFFIC_FACTOR = 1.2
#: Target utilisations the autoscaling policy is tried at, busiest (cheapest) first: the fleet's
#: replica count is the forecast load ÷ (a replica's capacity × this), chapter 6.
UTILISATIONS = (0.9, 0.8, 0.7, 0.6)
#: Spare replicas (N+k) the confirmation may add before it moves to the next candidate.
MAX_SPARE_REPLICAS = 2
#: Candidate layouts confirmed by simulation before giving up (the cheapest first).
MAX_CONFIRMED_CANDIDATES = 4
#: An attainment this far below the target is not tried with spare replicas (next layout instead).
FAR_MISS = 0.05
#: The fleet simulation's time step in the planner, seconds (chapter 6 shows how little the
#: attainment of a day moves between 1 s and this step; it keeps a plan under a minute).
PLAN_DT_S = 10.0
DAYS = autoscaling.DAYS
POLICIES = autoscaling.POLICIES


@dataclass(frozen=True)
class Candidate:
    """The cheapest layout of one GPU type and precision at the peak load (chapter 3's search)."""

    gpu: str
    precision: str
    layout: layouts.Layout
    calibration: sizing.Calibration | None = None   # None: the published one

    @property
    def cost_per_hour(self) -> float:
        return self.layout.cost_per_hour

    def replica(self) -> sizing.Replica:
        return sizing.Replica(self.layout.model, self.gpu, tp=self.layout.tp, pp=self.layout.pp,
                              precision=self.precision, calibration=self.calibration)

    def as_dict(self) -> dict:
        return {"gpu": self.gpu, "precision": self.precision, **self.layout.as_dict()}


def _peak_rps(scenario: Scenario, day: str, traffic_factor: float) -> float:
    peak = scenario.exam_peak_rps if day == "exam" else scenario.normal_peak_rps
    return peak * traffic_factor


def _day(scenario: Scenario, day: str, traffic_factor: float = 1.0):
    """The day's traffic curve (chapter 6) for ``scenario``, scaled by ``traffic_factor``."""
    return student_day_profile(scenario.normal_peak_rps * traffic_factor,
                               exam_season=(day == "exam"),
                               exam_multiplier=scenario.exam_multiplier)


def _target(scenario: Scenario) -> slo.SLO:
    return slo.SLO(ttft_s=scenario.ttft_target_s, tpot_s=scenario.tpot_target_s)


def candidates(scenario: Scenario = TANVI, *, gpu_ids=None, precisions=("bf16", "fp8"),
               day: str = "exam", traffic_factor: float = 1.0,
               calibration: sizing.Calibration | None = None) -> list[Candidate]:
    """Every layout, on every GPU type × precision, that meets the targets at the peak; cheapest first.

    A GPU type without fp8 support (the A100) is skipped for fp8; a GPU type on which no layout meets
    the targets contributes nothing. Ties in cost go to fewer GPUs, then to the search's own order.
    """
    gpu_ids = scenario.candidate_gpu_ids if gpu_ids is None else tuple(gpu_ids)
    if not gpu_ids:
        raise ValueError("gpu_ids must name at least one GPU type")
    peak = _peak_rps(scenario, day, traffic_factor)
    found = []
    for gpu_id in gpu_ids:
        gpu = get_gpu(gpu_id)
        for precision in precisions:
            if precision == "fp8" and gpu.fp8_flops_per_s is None:
                continue
            ranked = layouts.search_layouts(
                scenario.model_id, gpu.id, peak_rps=peak, isl=scenario.prompt_tokens_mean,
                osl=scenario.answer_tokens_mean, ttft_target_s=scenario.ttft_target_s,
                tpot_target_s=scenario.tpot_target_s, precision=precision,
                calibration=calibration)
            found += [Candidate(gpu.id, precision, lay, calibration) for lay in ranked
                      if lay.meets_slo]
    return sorted(found, key=lambda c: (c.cost_per_hour, c.layout.gpus))


def cheapest_per_gpu(cands: list[Candidate]) -> list[Candidate]:
    """The cheapest candidate of each (GPU type, precision), in cost order."""
    seen, out = set(), []
    for c in cands:
        if (c.gpu, c.precision) not in seen:
            seen.add((c.gpu, c.precision))
            out.append(c)
    return out


def _meets(summary: dict, scenario: Scenario) -> bool:
    return summary["attainment"] is not None and summary["attainment"] >= scenario.attainment_target


def _simulate(candidate: Candidate, scenario: Scenario, *, day: str, policy: str, headroom: int,
              cold_start_s, seed: int, dt_s: float, utilisation: float,
              traffic_factor: float = 1.0) -> dict:
    # The policy plans for the forecast (traffic_factor 1); the day it meets may be busier.
    forecast = _day(scenario, day)
    actual = _day(scenario, day, traffic_factor)
    rep = candidate.replica()
    model = autoscaling.replica_model(rep, prompt_tokens_mean=scenario.prompt_tokens_mean,
                                      output_tokens_mean=scenario.answer_tokens_mean,
                                      tpot_target_s=scenario.tpot_target_s)
    cold = None if cold_start_s is None else float(cold_start_s)
    fleet_start = (autoscaling.ColdStart().total_s(rep) if cold is None else cold)
    pol = autoscaling.make_policy(policy, model, day=forecast, lead_s=fleet_start, seed=seed,
                                  utilisation=utilisation)
    work = autoscaling.day_workload(actual, seed=seed, scenario=scenario)
    return autoscaling.simulate_day(rep, day=actual, policy=pol, cold_start=cold, seed=seed,
                                    dt_s=dt_s, headroom=headroom, max_replicas=256,
                                    target=_target(scenario), model=model, workload=work)


def _breaks_first(run, scenario: Scenario) -> str:
    """Which target the extra traffic breaks first: the one missed by the most requests."""
    counts = run.counts()
    t = run.timelines
    ttft_miss = int((slo.ttft_s(t) > scenario.ttft_target_s).sum())
    tpot = slo.tpot_s(t)
    tpot_miss = int((tpot[~_isnan(tpot)] > scenario.tpot_target_s).sum())
    misses = {"TTFT (students wait for the first word)": ttft_miss,
              "TPOT (answers stream slower than reading speed)": tpot_miss,
              "admission (requests turned away)": counts["rejected"]}
    worst = max(misses, key=misses.get)
    return worst if misses[worst] > 0 else "nothing: every target still holds"


def _isnan(x):
    import numpy as np

    return np.isnan(x)


def _prefix_ttft(rep: sizing.Replica, scenario: Scenario, prefix_share: float) -> dict:
    """TTFT of one mean prompt on an idle replica, cold cache and warm (shared prefix cached)."""
    isl = scenario.prompt_tokens_mean
    cached = int(math.floor(isl * prefix_share))
    cold = sizing.ttft_s(rep, isl)
    warm = cold - sizing.prefill_time_s(rep, isl) + sizing.iteration_time_s(
        rep, prefill=[(isl - cached, cached)]) if cached < isl else cold
    return {"prefix_share": prefix_share, "cached_tokens": cached, "ttft_s_cold_cache": cold,
            "ttft_s_warm_cache": warm}


def plan(scenario: Scenario = TANVI, *, gpu_ids=None, precisions=("bf16", "fp8"),
         day: str = "exam", policy: str = "scheduled", cold_start_s: float | None = None,
         prefix_share: float | None = None, seed: int = 0, dt_s: float = PLAN_DT_S,
         risks: bool = True, calibration: sizing.Calibration | None = None) -> dict:
    """Plan the fleet for ``scenario`` (default: Tanvi's, exactly as the book states it).

    Parameters
    ----------
    scenario : the givens (model, candidate GPUs, traffic, lengths, SLO); see
        :class:`vidya_lab.scenario.Scenario`. Use :func:`dataclasses.replace` to ask "what if".
    gpu_ids : GPU types to consider (default ``scenario.candidate_gpu_ids``).
    precisions : weight precisions to consider (fp8 is skipped on GPUs without it).
    day : ``"exam"`` or ``"normal"``: the day the fleet is planned and confirmed for.
    policy : the autoscaling policy of the confirmation: ``"scheduled"``, ``"predictive"`` or
        ``"reactive"``.
    cold_start_s : seconds from "scale up" to serving; ``None`` derives it from its parts (chapter 6).
    prefix_share : fraction of the mean prompt that is a shared, cacheable prefix; ``None`` takes
        the scenario's (syllabus + subject prompt).
    seed : the simulated day's random seed.
    dt_s : the fleet simulation's time step, seconds.
    risks : also simulate the risk scenarios (+20 % traffic; reactive scaling at the rush).
    calibration : the cost model's :class:`~vidya_lab.sizing.Calibration` for every layout and
        simulation (None: the published one; e.g. :func:`vidya_lab.sizing.load_calibration_file`).

    Returns
    -------
    dict, JSON-ready. Contract keys: ``gpu``, ``gpus`` (GPUs at the peak: peak replicas × tp × pp),
    ``tp``, ``pp``, ``replicas_peak``, ``monthly_cost`` (USD), ``ttft_s`` and ``tpot_s``
    (percentile objects, seconds, over the simulated day), ``attainment`` (0..1). Also
    ``precision``, ``replicas_by_hour``, ``gpu_hours_per_day``, ``daily_cost``, ``cost_per_hour_peak``,
    ``headroom``, ``utilisation`` (the policy's target), ``policy``, ``cold_start_s``, ``candidates`` (the cheapest layout of each GPU
    type and precision that meets the targets at the peak, by the calculator),
    ``confirmed`` (the simulations tried), ``prefix_cache``, ``risks``, ``scenario`` and
    ``wall_s``. Raises ``ValueError`` when no candidate meets the targets.
    """
    t0 = time.perf_counter()
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, got {type(scenario).__name__}")
    get_model(scenario.model_id)
    v.check_choice("day", day, DAYS)
    v.check_choice("policy", policy, POLICIES)
    if cold_start_s is not None:
        v.check_real("cold_start_s", cold_start_s, minimum=0.0)
    share = (scenario.syllabus_prompt_tokens + scenario.subject_prompt_tokens) \
        / scenario.prompt_tokens_mean if prefix_share is None else prefix_share
    v.check_fraction("prefix_share", share)
    v.check_real("dt_s", dt_s, minimum=0.1, maximum=60.0)

    ranked = candidates(scenario, gpu_ids=gpu_ids, precisions=precisions, day=day,
                        calibration=calibration)
    if not ranked:
        raise ValueError(
            f"no layout of {scenario.model_id} on {', '.join(gpu_ids or scenario.candidate_gpu_ids)} "
            f"meets TTFT <= {scenario.ttft_target_s} s and TPOT <= {scenario.tpot_target_s} s at "
            f"{_peak_rps(scenario, day, 1.0):g} requests/s; relax a target or add a GPU type")

    confirmed, chosen, day_run = [], None, None
    tries = [(u, 0) for u in UTILISATIONS] + [(UTILISATIONS[-1], k)
                                              for k in range(1, MAX_SPARE_REPLICAS + 1)]
    for cand in ranked[:MAX_CONFIRMED_CANDIDATES]:
        for utilisation, headroom in tries:
            out = _simulate(cand, scenario, day=day, policy=policy, headroom=headroom,
                            cold_start_s=cold_start_s, seed=seed, dt_s=dt_s,
                            utilisation=utilisation)
            s = out["summary"]
            ok = _meets(s, scenario)
            confirmed.append({"gpu": cand.gpu, "precision": cand.precision, "tp": cand.layout.tp,
                              "pp": cand.layout.pp, "replicas": cand.layout.replicas,
                              "utilisation": utilisation, "headroom": headroom,
                              "attainment": s["attainment"], "max_replicas": s["max_replicas"],
                              "cost": s["cost"], "meets_target": ok})
            if ok:
                chosen, day_run = (cand, utilisation, headroom), out
                break
            if (headroom == 0 and utilisation == UTILISATIONS[-1]
                    and (s["attainment"] is None
                         or s["attainment"] < scenario.attainment_target - FAR_MISS)):
                break  # spare replicas will not close a gap this wide: try the next layout
        if chosen:
            break
    if chosen is None:
        raise ValueError(
            "no candidate met the attainment target of "
            f"{scenario.attainment_target:.0%} in its simulated {day} day; tried: "
            + "; ".join(f"{c['gpu']}/{c['precision']} TP{c['tp']}xPP{c['pp']} +{c['headroom']}: "
                        f"{c['attainment']:.3f}" for c in confirmed)
            + "; relax a target or add a GPU type")

    cand, utilisation, headroom = chosen
    s = day_run["summary"]
    rep = cand.replica()
    replicas_peak = int(s["max_replicas"])
    result = {
        "gpu": cand.gpu,
        "gpus": replicas_peak * rep.n_gpus,
        "tp": rep.tp,
        "pp": rep.pp,
        "replicas_peak": replicas_peak,
        "monthly_cost": s["cost"] * DAYS_PER_MONTH,
        "ttft_s": s["ttft_s"],
        "tpot_s": s["tpot_s"],
        "attainment": s["attainment"],
        "precision": cand.precision,
        "day": day,
        "policy": policy,
        "headroom": headroom,
        "utilisation": utilisation,
        "cold_start_s": day_run["cold_start_s"],
        "rush_attainment": s["rush_attainment"],
        "per_hour_attainment": s["per_hour_attainment"],
        "replicas_by_hour": day_run["replicas_by_hour"],
        "arrivals_by_hour": [h["arrived"] for h in day_run["hours"]],
        "gpu_hours_per_day": s["gpu_hours"],
        "daily_cost": s["cost"],
        "days_per_month": DAYS_PER_MONTH,
        "cost_per_hour_peak": sizing.cost_per_hour_usd(rep, replicas_peak),
        "arrived": s["arrived"],
        "rejected": s["rejected"],
        "layout_sized_replicas": cand.layout.replicas,
        "candidates": [c.as_dict() for c in cheapest_per_gpu(ranked)],
        "confirmed": confirmed,
        "prefix_cache": _prefix_ttft(rep, scenario, share),
        "scenario": {k: (list(x) if isinstance(x, tuple) else x)
                     for k, x in asdict(scenario).items() if k != "notes"},
    }
    if risks:
        busy = _simulate(cand, scenario, day=day, policy=policy, headroom=headroom,
                         cold_start_s=cold_start_s, seed=seed, dt_s=dt_s, utilisation=utilisation,
                         traffic_factor=RISK_TRAFFIC_FACTOR)
        reactive = _simulate(cand, scenario, day=day, policy="reactive", headroom=headroom,
                             cold_start_s=cold_start_s, seed=seed, dt_s=dt_s,
                             utilisation=utilisation)
        result["risks"] = {
            "traffic_factor": RISK_TRAFFIC_FACTOR,
            "attainment_above_forecast": busy["summary"]["attainment"],
            "rush_attainment_above_forecast": busy["summary"]["rush_attainment"],
            "breaks_first": _breaks_first(busy["run"], scenario),
            "reactive_rush_attainment": reactive["summary"]["rush_attainment"],
            "reactive_attainment": reactive["summary"]["attainment"],
            "reactive_daily_cost": reactive["summary"]["cost"],
        }
    result["wall_s"] = time.perf_counter() - t0
    return result


def what_if(scenario: Scenario = TANVI, **changes) -> Scenario:
    """The scenario with some givens changed: ``what_if(exam_multiplier=12)``; names are checked."""
    fields = set(Scenario.__dataclass_fields__)
    unknown = sorted(set(changes) - fields)
    if unknown:
        raise ValueError(f"unknown scenario field(s) {unknown}; known: {sorted(fields)}")
    return replace(scenario, **changes)
