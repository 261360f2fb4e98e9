"""Reading a simulated day: per-hour numbers, the morning rush, and the summary the CLI prints.

Every metric comes from the requests' timelines through :mod:`vidya_lab.slo` (the same code that
judges a single replica or a recorded trace): attainment counts every arrival, and a rejected or
still-in-flight request counts as missed.
"""

from __future__ import annotations

import math

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import slo
from vidya_lab.autoscaling.day import RUSH_HOURS, SECONDS_PER_HOUR, check_hours, tutor_slo
from vidya_lab.autoscaling.fleet import FleetRun


def _hour_index(t_s: np.ndarray) -> np.ndarray:
    return np.floor(np.asarray(t_s) / SECONDS_PER_HOUR).astype(np.int64)


def _args(run, target) -> slo.SLO:
    v.check_instance("run", run, FleetRun, "FleetRun (from simulate_fleet or simulate_day)")
    return tutor_slo() if target is None else v.check_instance("target", target, slo.SLO, "slo.SLO")


def _given_hours(hours) -> list[dict]:
    v.check_instance("hours", hours, (list, tuple), "list of dicts (from hourly)")
    for i, h in enumerate(hours):
        if not isinstance(h, dict) or not {"attainment", "replicas_mean"} <= h.keys():
            raise TypeError(f"hours[{i}] must be a dict of hourly() (with 'attainment' and "
                            f"'replicas_mean'), got {type(h).__name__}")
    return list(hours)


def hourly(run: FleetRun, target: slo.SLO | None = None) -> list[dict]:
    """Per hour of the window (by arrival for requests, by time for replicas).

    Each dict: ``hour``, ``arrived``, ``attainment`` (0..1 of that hour's arrivals; ``None`` if none
    arrived), ``ttft_p99_s`` (finished requests; ``None`` if none), ``replicas_mean`` (serving, time
    average), ``replicas_max`` (serving + starting + draining), ``gpu_hours``.
    """
    target = _args(run, target)
    nh = max(1, int(math.ceil(run.horizon_s / SECONDS_PER_HOUR)))
    hr = np.minimum(_hour_index(run.arrival_s), nh - 1)
    ok = run.meets(target)
    arrived = np.bincount(hr, minlength=nh)
    met = np.bincount(hr, weights=ok.astype(float), minlength=nh)
    fin = run.outcome_codes == slo.FINISHED
    tl = run.timelines
    ttft_all = np.full(run.arrival_s.size, np.nan)
    done = run.outcome_codes >= 0
    ttft_all[done] = tl.first_token_s - tl.arrival_s
    s = run.series
    sh = np.minimum(_hour_index(s["t_s"]), nh - 1)
    steps = np.bincount(sh, minlength=nh)
    serv = np.bincount(sh, weights=s["serving"], minlength=nh)
    billed = np.bincount(sh, weights=s["billed"], minlength=nh)
    fleet_size = s["serving"] + s["starting"] + s["draining"]
    n_gpus = run.fleet.model.replica.n_gpus
    out = []
    for h in range(nh):
        sel = (hr == h) & fin
        mx = fleet_size[sh == h]
        out.append({
            "hour": h,
            "arrived": int(arrived[h]),
            "attainment": float(met[h] / arrived[h]) if arrived[h] else None,
            "ttft_p99_s": float(np.percentile(ttft_all[sel], 99)) if sel.any() else None,
            "replicas_mean": float(serv[h] / steps[h]) if steps[h] else 0.0,
            "replicas_max": int(mx.max()) if mx.size else 0,
            "gpu_hours": float(billed[h] * run.dt_s / SECONDS_PER_HOUR * n_gpus),
        })
    return out


def rush_attainment(run: FleetRun, target: slo.SLO | None = None,
                    hours: tuple[float, float] = RUSH_HOURS) -> float | None:
    """Attainment (0..1) of the requests arriving in the morning rush (:data:`RUSH_HOURS`, hours of
    the day, ``(start, end)`` with 0 ≤ start < end ≤ 24); ``None`` if none arrived then."""
    target = _args(run, target)
    start, end = check_hours("hours", hours)
    hod = np.mod(run.arrival_s / SECONDS_PER_HOUR, 24.0)
    sel = (hod >= start) & (hod < end)
    if not sel.any():
        return None
    return float(np.mean(run.meets(target)[sel]))


def summary(run: FleetRun, target: slo.SLO | None = None, *, hours: list[dict] | None = None
            ) -> dict:
    """The JSON of ``vidya-lab autoscale``: counts, attainment, latency percentiles, bill.

    Keys: ``arrived``, ``finished``, ``rejected``, ``in_flight``, ``retried``, ``failures``,
    ``beyond_horizon``, ``attainment`` (0..1 of all arrivals; rejected and in-flight requests count
    as missed), ``rush_attainment``, ``ttft_s`` and ``tpot_s``
    (:func:`vidya_lab.slo.percentile_summary` over finished requests, seconds), ``gpu_hours``,
    ``cost`` (USD), ``max_replicas`` (largest fleet: serving + starting + draining),
    ``cold_start_s``, ``per_hour_attainment`` (one entry per hour, ``null`` for an hour with no
    arrivals), ``replicas_by_hour`` (time-averaged serving replicas).
    ``hours``: :func:`hourly` of the same run and target, if already computed.
    """
    target = _args(run, target)
    c = run.counts()
    ok = run.meets(target)
    hrs = hourly(run, target) if hours is None else _given_hours(hours)
    s = run.series
    size = s["serving"] + s["starting"] + s["draining"]
    return {
        **c,
        "attainment": float(np.mean(ok)) if ok.size else None,
        "rush_attainment": rush_attainment(run, target),
        "ttft_s": slo.percentile_summary(slo.ttft_s(run.timelines)),
        "tpot_s": slo.percentile_summary(slo.tpot_s(run.timelines)),
        "gpu_hours": run.gpu_hours,
        "cost": run.cost_usd,
        "max_replicas": int(size.max()) if size.size else 0,
        "cold_start_s": run.start_s,
        "per_hour_attainment": [h["attainment"] for h in hrs],
        "replicas_by_hour": [h["replicas_mean"] for h in hrs],
    }
