"""A second region: what losing the first one costs, and the spare capacity that covers it.

Tanvi's fleet runs in two regions, each serving its ``share`` of the students (active-active) with
its own autoscaler. At ``lost_at_s`` the first region is lost (an outage, or GPUs taken back); its
students are sent to the second, whose load jumps to the whole day's. The second region sees the
jump in its live load and scales up, but the replicas it asks for serve a cold start later, and in
an exam week that cold start is at the slow end of provisioning when GPU nodes are scarce
(:data:`~vidya_lab.autoscaling.cold_start.PROVISION_RANGE_S`,
:data:`vidya_lab.procurement.AVAILABILITY_RISK`). What covers the gap is spare capacity kept
serving in each region, ``spare`` replicas on top of its policy (N+k), billed all day.

:func:`failover` simulates the surviving region (the coarse fleet model, every request: the
requests that arrive there, its share before the loss and everyone after) and reads the attainment
of the hour after the loss. The requests in flight in the lost region are lost with it; they are
not counted here (chapter 6's replica failure counts them).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.autoscaling.cold_start import ColdStart, as_replica
from vidya_lab.autoscaling.day import (
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    day_profile,
    day_workload,
    tutor_slo,
)
from vidya_lab.autoscaling.fleet import MAX_REPLICAS
from vidya_lab.autoscaling.replica import ReplicaModel, replica_model
from vidya_lab.autoscaling.run_day import simulate_day
from vidya_lab.workload import DiurnalProfile, Workload, as_rng


def region_profile(day: str | DiurnalProfile, share: float) -> DiurnalProfile:
    """The day's curve for a region that serves ``share`` (0 < share ≤ 1) of the students."""
    s = v.check_fraction("share", share, allow_zero=False)
    prof = day_profile(day)
    return replace(prof, multiplier=prof.multiplier * s)


def failover_workload(day: str | DiurnalProfile = "exam", *, share: float = 0.5,
                      lost_at_s: float = 7 * SECONDS_PER_HOUR, seed: int = 0,
                      start_s: float = 6 * SECONDS_PER_HOUR,
                      duration_s: float = 2 * SECONDS_PER_HOUR) -> Workload:
    """The surviving region's requests over the window: each of the day's arrivals before
    ``lost_at_s`` with probability ``share`` (the students routed to it), every one after."""
    s = v.check_fraction("share", share, allow_zero=False)
    lost = v.check_real("lost_at_s", lost_at_s, minimum=0.0, maximum=SECONDS_PER_DAY)
    seed = v.check_int("seed", seed, minimum=0)
    start_s = v.check_real("start_s", start_s, minimum=0.0, maximum=SECONDS_PER_DAY)
    duration_s = v.check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False,
                              maximum=SECONDS_PER_DAY)
    w = day_workload(day, seed=seed, start_s=start_s, duration_s=duration_s)
    rng = as_rng(np.random.default_rng([seed, 7]))
    keep = (w.arrival_s >= lost) | (rng.random(len(w)) < s)
    return w[keep]


def failover(replica: sizing.Replica, *, spare: int = 0, day: str | DiurnalProfile = "exam",
             share: float = 0.5, lost_at_s: float = 7 * SECONDS_PER_HOUR,
             cold_start: ColdStart | float | None = None, policy: str = "predictive",
             start_s: float = 6 * SECONDS_PER_HOUR, duration_s: float = 2 * SECONDS_PER_HOUR,
             seed: int = 0, dt_s: float = 10.0, model: ReplicaModel | None = None,
             max_replicas: int = 256) -> dict:
    """The surviving region over the window, when the other is lost at ``lost_at_s``.

    The region runs ``policy`` (any of :data:`~vidya_lab.autoscaling.policies.POLICIES`; by default
    the predictive one, whose live floor is what reacts to the jump) for its ``share`` of ``day``,
    plus ``spare`` replicas (N+k), with ``cold_start`` (default :class:`ColdStart`). Returns
    ``attainment_after_loss`` (0..1 of the requests arriving in the hour after the loss),
    ``attainment`` (the whole window), ``p99_ttft_after_loss_s`` (finished requests, seconds),
    ``replicas_before`` and ``replicas_after`` (serving just before the loss, and the most serving
    in the hour after it), ``cold_start_s``, ``spare``, ``spare_usd_per_day`` (the spare replicas
    of *both* regions billed 24 hours, on-demand), and ``day`` (the :func:`simulate_day` result).
    """
    r = as_replica(replica)
    k = v.check_int("spare", spare, minimum=0, maximum=MAX_REPLICAS)
    lost = v.check_real("lost_at_s", lost_at_s, minimum=0.0, maximum=SECONDS_PER_DAY)
    start = v.check_real("start_s", start_s, minimum=0.0, maximum=SECONDS_PER_DAY)
    dur = v.check_real("duration_s", duration_s, minimum=1.0, maximum=SECONDS_PER_DAY)
    if not start <= lost < start + dur:
        raise ValueError(f"lost_at_s must lie in the window [start_s, start_s + duration_s) = "
                         f"[{start:g}, {start + dur:g}), got {lost:g}")
    m = replica_model(r) if model is None else v.check_instance("model", model, ReplicaModel)
    work = failover_workload(day, share=share, lost_at_s=lost, seed=seed, start_s=start,
                             duration_s=dur)
    d = simulate_day(r, day=region_profile(day, share), policy=policy, cold_start=cold_start,
                     seed=seed, dt_s=dt_s, headroom=k, start_s=start, duration_s=dur, model=m,
                     workload=work, max_replicas=max_replicas)
    run = d["run"]
    after = (run.arrival_s >= lost) & (run.arrival_s < lost + SECONDS_PER_HOUR)
    ok = run.meets(tutor_slo())
    done = run.outcome_codes == 0
    ttft = np.full(run.arrival_s.size, np.nan)
    ttft[run.outcome_codes >= 0] = run.timelines.first_token_s - run.timelines.arrival_s
    sel = after & done
    t, serving = run.series["t_s"], run.series["serving"]
    before = serving[t < lost]
    later = serving[(t >= lost) & (t < lost + SECONDS_PER_HOUR)]
    return {"attainment_after_loss": float(np.mean(ok[after])) if after.any() else None,
            "attainment": d["summary"]["attainment"],
            "p99_ttft_after_loss_s": float(np.percentile(ttft[sel], 99)) if sel.any() else None,
            "replicas_before": int(before[-1]) if before.size else 0,
            "replicas_after": int(later.max()) if later.size else 0,
            "cold_start_s": d["cold_start_s"], "spare": k,
            "spare_usd_per_day": 2 * k * sizing.cost_per_hour_usd(r) * 24.0 if k else 0.0,
            "day": d}

