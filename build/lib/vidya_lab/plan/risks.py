"""Step 4 of the plan: what could still go wrong, each risk simulated or stated with its source.

* traffic beyond the margin the plan survives (another +20 %): the day on the fluid fleet, and its
  busiest hours request by request, to say which target breaks first;
* the schedule forgotten: the 7 am rush under purely reactive scaling, with the cold start's parts;
* the prefix cache cold (a replica that skipped its warm-up, or lost its cache): the day without it;

(the last two run chapter 6's fluid fleet: they need only attainment, and it is a hundred times
faster.)
* on-demand capacity not there in the exam weeks (the burst the plan buys on demand), with the
  fallback and its price: reserving the exam weeks' peak for those weeks (AWS sells such windows as
  Capacity Blocks), priced here at the on-demand rate (an upper bound);
* the quiet hours: a fleet of one replica at night is one failure domain (the node-loss constraint
  holds at the peak), and what a second replica on another node would cost;
* the calibration: a GPU type whose efficiencies were fitted on few rows of its own, or none.
"""

from __future__ import annotations

import math

import numpy as np

from vidya_lab import procurement, sizing, slo
from vidya_lab.plan.confirm import Options, simulate
from vidya_lab.plan.failures import peak_time_s
from vidya_lab.scenario import Scenario

#: Extra traffic tried beyond the plan's margin (the "what if we are wrong by more" question).
EXTRA_BEYOND_MARGIN = 0.2
#: The busiest hours of that day simulated request by request (to say which target breaks first),
#: seconds around its peak; the whole day runs on the fluid fleet.
BUSY_WINDOW_S = 2 * 3600.0
#: Adult silent reading of English non-fiction, words per minute (Brysbaert 2019, procurement.csv),
#: and tokens per English word (OpenAI's rule of thumb): the pace a TPOT is compared with.
READING_WPM = 238.0
TOKENS_PER_WORD = 100 / 75


def reading_pace_s() -> float:
    """Time an average adult takes to read one token, seconds (~0.19 s)."""
    return slo.tpot_for_reading_speed(READING_WPM, TOKENS_PER_WORD)


def breaks_first(run, scenario: Scenario) -> str:
    """Which target extra traffic breaks first: the one missed by the most requests."""
    counts = run.counts()
    t = run.timelines
    ttft_miss = int((slo.ttft_s(t) > scenario.ttft_target_s).sum())
    tpot = slo.tpot_s(t)
    tpot_miss = int((tpot[~np.isnan(tpot)] > scenario.tpot_target_s).sum())
    gaps = run.longest_gap_s
    itl_miss = 0 if gaps is None else int((gaps[~np.isnan(gaps)] > scenario.itl_target_s).sum())
    misses = {"TTFT (students wait for the first word)": ttft_miss,
              f"TPOT (answers stream slower than the {scenario.tpot_target_s * 1e3:g} ms promised; "
              f"an adult reads a token in about {reading_pace_s() * 1e3:.0f} ms)": tpot_miss,
              f"ITL (a gap between two tokens longer than {scenario.itl_target_s * 1e3:.0f} ms)":
              itl_miss, "admission (requests turned away)": counts["rejected"]}
    worst = max(misses, key=misses.get)
    return worst if misses[worst] > 0 else "nothing: every target still holds"


def calibration_note(replica: sizing.Replica) -> str:
    """How far the chosen GPU's timings rest on measurements."""
    gid = replica.gpu.id
    rows = sizing.timed_gpus().get(gid, 0)
    if rows == 0:
        return (f"{gid} has no published timing row: its latencies and throughputs are "
                "extrapolated from the other GPUs' calibration")
    scale = replica.calibration.scale_for(gid)
    if scale != 1.0:
        return (f"{gid}'s efficiencies were fitted on its own {rows} published rows (factor "
                f"{scale:.2f} on the reference GPUs'); re-plan with a calibration fitted on your own "
                "benchmark before signing (vidya-lab calibrate)")
    return f"{gid} is a reference GPU of the calibration ({rows} published timing rows)"


def fallback(best: dict) -> dict:
    """If the exam weeks' on-demand burst cannot be bought: reserve the exam day's peak instances
    for the exam days (a reservation of a future window), priced at the on-demand rate (an upper
    bound; AWS prices its Capacity Blocks below it). Returns ``what``, ``instances``,
    ``yearly_cost`` and ``extra_cost_per_year`` (USD)."""
    year, cand = best["bill"]["year"], best["candidate"]
    shape = year.instance_gpus
    exam = best["bill"]["exam"]["replicas_by_hour"]
    peak = math.ceil(max(exam) * cand.gpus_per_replica / shape - 1e-9)
    od = sizing.get_gpu(cand.gpu).price_per_hour_usd
    extra_instances = max(0, peak - year.reserved_instances)
    window = year.exam_days * 24.0 * extra_instances * shape * od
    exam_burst = year.exam_days * year.on_demand_gpu_hours_exam_day * od
    cost = year.yearly_cost["total"] - exam_burst + window
    unit = f"{shape}-GPU instance" + ("" if peak == 1 else "s")
    return {"what": f"reserve {peak} {unit} (the exam day's peak) for the {year.exam_days} exam "
                    "days, ahead of the season",
            "instances": peak, "yearly_cost": cost,
            "extra_cost_per_year": cost - year.yearly_cost["total"]}


def quiet_hours(best: dict, scenario: Scenario) -> dict:
    """The hours the fleet runs on one replica (one failure domain): losing its node there stops the
    service for a cold start. Returns ``fewest_replicas`` (the least of the forecast days' hourly
    means), ``hours_on_one_replica`` (a year's hours under two replicas), and
    ``extra_cost_per_year`` (USD) of keeping a second replica, on another node, in those hours at
    the on-demand price."""
    cand = best["candidate"]
    od = sizing.get_gpu(cand.gpu).price_per_hour_usd
    hours, fewest = 0.0, float("inf")
    for day, n in (("exam", scenario.exam_days_per_year), ("normal", scenario.normal_days_per_year)):
        curve = best["bill"][day]["replicas_by_hour"]
        fewest = min(fewest, min(curve))
        hours += n * sum(max(0.0, 2.0 - x) for x in curve)
    return {"fewest_replicas": fewest, "hours_on_one_replica": hours,
            "extra_cost_per_year": hours * cand.gpus_per_replica * od}


def assess(best: dict, scenario: Scenario, opts: Options) -> dict:
    """Every risk of the chosen plan ``best`` (a search record; module docstring)."""
    cand, u, spare = best["candidate"], best["utilisation"], best["spares"]
    beyond = 1.0 + opts.traffic_margin + EXTRA_BEYOND_MARGIN
    at = peak_time_s(scenario, opts.day)  # the busiest hours, request by request
    start = max(0.0, at - BUSY_WINDOW_S / 2)
    busy = simulate(cand, scenario, opts, utilisation=u, headroom=spare, traffic_factor=beyond,
                    start_s=start, duration_s=min(BUSY_WINDOW_S, 86400.0 - start))
    whole = simulate(cand, scenario, opts, utilisation=u, headroom=spare, traffic_factor=beyond,
                     fidelity="fluid")
    reactive = simulate(cand, scenario, opts, utilisation=u, headroom=spare, policy="reactive",
                        fidelity="fluid")
    year = best["bill"]["year"]
    burst = year.exam_days * year.on_demand_gpu_hours_exam_day \
        + year.normal_days * year.on_demand_gpu_hours_normal_day
    total = burst + procurement.HOURS_PER_YEAR * year.reserved_gpus
    out = {"traffic_factor": beyond,
           "attainment_above_forecast": whole["summary"]["attainment"],
           "rush_attainment_above_forecast": whole["summary"]["rush_attainment"],
           "peak_hours_attainment_above_forecast": busy["summary"]["attainment"],
           "breaks_first": breaks_first(busy["run"], scenario),
           "reactive_rush_attainment": reactive["summary"]["rush_attainment"],
           "reactive_attainment": reactive["summary"]["attainment"],
           "reactive_daily_cost": reactive["summary"]["cost"],
           "on_demand_availability": procurement.AVAILABILITY_RISK,
           "on_demand_share_of_gpu_hours": burst / max(total, 1e-9),
           "on_demand_share_of_exam_day": year.on_demand_gpu_hours_exam_day
           / max(24.0 * year.reserved_gpus + year.on_demand_gpu_hours_exam_day, 1e-9),
           "fallback": fallback(best), "quiet_hours": quiet_hours(best, scenario),
           "calibration": calibration_note(cand.replica())}
    if cand.cached_tokens > 0:
        cold = simulate(cand, scenario, opts, utilisation=u, headroom=spare,
                        cached_prefix_tokens=0, fidelity="fluid")
        out["cold_cache_attainment"] = cold["summary"]["attainment"]
        out["cold_cache_rush_attainment"] = cold["summary"]["rush_attainment"]
    return out
