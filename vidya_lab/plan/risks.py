"""Step 4 of the plan: what could still go wrong, each risk simulated or stated with its source.

* traffic beyond the margin the plan survives (another +20 %): what breaks first;
* the schedule forgotten: the 7 am rush under purely reactive scaling, with the cold start's parts;
* the prefix cache cold (a replica that skipped its warm-up, or lost its cache): the day without it;

(the last two run chapter 6's fluid fleet: they need only attainment, and it is a hundred times
faster; the first runs every request, to say which target breaks first.)
* on-demand capacity not there in the exam weeks (the burst the plan buys on demand);
* the calibration: a GPU type whose efficiencies were fitted on few rows of its own, or none.
"""

from __future__ import annotations

import numpy as np

from vidya_lab import procurement, sizing, slo
from vidya_lab.plan.candidates import Candidate
from vidya_lab.plan.confirm import Options, simulate
from vidya_lab.scenario import Scenario

#: Extra traffic tried beyond the plan's margin (the "what if we are wrong by more" question).
EXTRA_BEYOND_MARGIN = 0.2
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
    misses = {"TTFT (students wait for the first word)": ttft_miss,
              f"TPOT (answers stream slower than the {scenario.tpot_target_s * 1e3:g} ms promised; "
              f"an adult reads a token in about {reading_pace_s() * 1e3:.0f} ms)": tpot_miss,
              "admission (requests turned away)": counts["rejected"]}
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


def assess(cand: Candidate, scenario: Scenario, opts: Options, *, utilisation: float,
           spare: int, purchase: procurement.PurchasePlan) -> dict:
    """Every risk of the chosen plan (module docstring)."""
    beyond = 1.0 + opts.traffic_margin + EXTRA_BEYOND_MARGIN
    busy = simulate(cand, scenario, opts, utilisation=utilisation, headroom=spare,
                    traffic_factor=beyond)
    reactive = simulate(cand, scenario, opts, utilisation=utilisation, headroom=spare,
                        policy="reactive", fidelity="fluid")
    out = {"traffic_factor": beyond,
           "attainment_above_forecast": busy["summary"]["attainment"],
           "rush_attainment_above_forecast": busy["summary"]["rush_attainment"],
           "breaks_first": breaks_first(busy["run"], scenario),
           "reactive_rush_attainment": reactive["summary"]["rush_attainment"],
           "reactive_attainment": reactive["summary"]["attainment"],
           "reactive_daily_cost": reactive["summary"]["cost"],
           "on_demand_availability": procurement.AVAILABILITY_RISK,
           "on_demand_share_of_gpu_hours": purchase.on_demand_gpu_hours
           / max(purchase.on_demand_gpu_hours + purchase.reserved_gpu_hours
                 + purchase.spot_gpu_hours, 1e-9),
           "calibration": calibration_note(cand.replica())}
    if opts.cached_prefix_tokens > 0:
        cold = simulate(cand, scenario, opts, utilisation=utilisation, headroom=spare,
                        cached_prefix_tokens=0, fidelity="fluid")
        out["cold_cache_attainment"] = cold["summary"]["attainment"]
        out["cold_cache_rush_attainment"] = cold["summary"]["rush_attainment"]
    return out
