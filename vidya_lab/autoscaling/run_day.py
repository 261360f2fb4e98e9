"""One simulated day of Tanvi's service: :func:`simulate_day`, the entry point for the chapter, the
CLI (``vidya-lab autoscale``) and the capstone planner."""

from __future__ import annotations

import numpy as np

from vidya_lab import _cache, sizing, slo
from vidya_lab import _validate as v
from vidya_lab.autoscaling.cold_start import ColdStart, as_replica
from vidya_lab.autoscaling.day import SECONDS_PER_DAY, day_profile, day_workload, tutor_slo
from vidya_lab.autoscaling.fleet import MAX_START_S, Fleet
from vidya_lab.autoscaling.fluid import simulate_fluid
from vidya_lab.autoscaling.metrics import hourly, summary
from vidya_lab.autoscaling.policies import TARGET_UTILISATION, make_policy, replicas_for_rate
from vidya_lab.autoscaling.replica import ReplicaModel, replica_model
from vidya_lab.autoscaling.simulate import simulate_fleet
from vidya_lab.workload import DiurnalProfile, Workload

FIDELITIES = ("fleet", "fluid")


def _cold(cold_start) -> tuple[ColdStart, float | None]:
    """``cold_start`` as the fleet's (parts, seconds override)."""
    if isinstance(cold_start, ColdStart):
        return cold_start, None
    if cold_start is None:
        return ColdStart(), None
    return ColdStart(), v.check_real("cold_start", cold_start, minimum=0.0, maximum=MAX_START_S)


#: The last few days' requests drawn by :func:`_day_requests`, by (day, seed, start, duration).
_DRAWN: dict = {}
_DRAWN_MAX = 2


def _day_requests(prof, seed, start: float, dur: float) -> Workload:
    """:func:`~vidya_lab.autoscaling.day.day_workload`, drawn once for the same day and seed: a
    chapter or a plan that runs several policies or failures over one day (a second of work and
    100 MB each time) shares one draw. The shared workload's arrays are read-only."""
    try:
        key = (prof, seed, start, dur) if type(seed) is int else None
        hash(key)
    except TypeError:
        key = None
    if key is not None and key in _DRAWN:
        return _DRAWN[key]
    w = day_workload(prof, seed=seed, start_s=start, duration_s=dur)
    if key is not None:
        for col in (w.arrival_s, w.prompt_tokens, w.output_tokens, w.prefix_id, w.prefix_tokens,
                    w.klass):
            col.setflags(write=False)
        while len(_DRAWN) >= _DRAWN_MAX:
            _DRAWN.pop(next(iter(_DRAWN)))
        _DRAWN[key] = w
    return w


def _fleet_day(prof, fleet, pol, workload, seed, dt_s, start, dur, init, target):
    """The day at the fleet fidelity: the run, its hours and its summary."""
    if workload is None:
        workload = _day_requests(prof, seed, start, dur)
    v.check_instance("workload", workload, Workload, "vidya_lab.workload.Workload")
    run = simulate_fleet(workload, fleet, pol, seed=seed, dt_s=dt_s, horizon_s=start + dur,
                         initial_replicas=init)
    hours = hourly(run, target)
    return run, hours, summary(run, target, hours=hours)


def simulate_day(replica: sizing.Replica, *, day: str | DiurnalProfile = "exam",
                 policy="reactive", cold_start: ColdStart | float | None = None, seed: int = 0,
                 dt_s: float = 5.0, min_replicas: int = 1, max_replicas: int = 64,
                 headroom: int = 0, router: str = "round_robin", pool: str = "none",
                 pool_size: int = 0, mtbf_s: float | None = None,
                 failures_at_s: tuple[float, ...] = (), margin: float = 0.1,
                 utilisation: float = TARGET_UTILISATION,
                 yesterday: str | DiurnalProfile | None = None, start_s: float = 0.0,
                 duration_s: float = SECONDS_PER_DAY, target: slo.SLO | None = None,
                 model: ReplicaModel | None = None, max_retries: int = 1,
                 queue_timeout_s: float = 60.0, workload: Workload | None = None,
                 fidelity: str = "fleet", cached_prefix_tokens: int = 0) -> dict:
    """One simulated day of Tanvi's service: the entry point for chapters, the CLI and the planner.

    Parameters
    ----------
    replica : the replica every fleet member is (:class:`vidya_lab.sizing.Replica`).
    day : ``"normal"``, ``"exam"`` or a :class:`~vidya_lab.workload.DiurnalProfile`.
    policy : ``"reactive"``, ``"scheduled"``, ``"predictive"`` or a policy object.
    cold_start : a :class:`ColdStart` (its parts; default :class:`ColdStart()`) or seconds (at most
        :data:`~vidya_lab.autoscaling.fleet.MAX_START_S`).
    seed : the day's arrivals and lengths (and random failures, and yesterday for "predictive").
    dt_s : the fleet's time step, seconds (5 s: an exam day in seconds; at or below the
        autoscaler's 15 s tick the day's numbers barely move).
    min_replicas, max_replicas, headroom, router, pool, pool_size, mtbf_s, failures_at_s,
        max_retries, queue_timeout_s: see :class:`~vidya_lab.autoscaling.fleet.Fleet`.
    margin : the forecast margin of "scheduled" and "predictive" (0.1 = 10 % above the curve).
    utilisation : the target every named policy aims at: offered load ÷ (replicas × capacity_rps)
        (:func:`~vidya_lab.autoscaling.policies.utilisation`, default :data:`TARGET_UTILISATION`).
    yesterday : the day "predictive" learns from (default: the same kind as ``day``).
    start_s, duration_s : the window of the day simulated, seconds from midnight.
    target : the SLO (default Tanvi's).
    model : the coarse replica (default :func:`replica_model` of ``replica`` with Tanvi's lengths
        and targets, and ``cached_prefix_tokens``).
    workload : the requests (default :func:`day_workload` of ``day`` over the window with ``seed``);
        pass one to run several policies on the very same arrivals.
    fidelity : ``"fleet"`` (:func:`simulate_fleet`, every request) or ``"fluid"``
        (:func:`simulate_fluid`: no requests, no failures, about a hundred times faster; the
        chapter 6 widget's fidelity).
    cached_prefix_tokens : prompt tokens a warm replica finds in its prefix cache (default 0: no
        cache counted, the cold-cache case); used only when ``model`` is not given.

    Returns
    -------
    dict with ``run`` (:class:`FleetRun`, or :class:`FluidRun` for ``"fluid"``), ``summary``
    (:func:`summary`, or :meth:`FluidRun.summary`), ``hours`` (:func:`hourly`),
    ``replicas_by_hour`` (time-averaged serving replicas), ``gpu_hours``, ``cost_usd``,
    ``cold_start_s``, ``policy`` (the policy object) and ``model`` (:class:`ReplicaModel`).

    With the environment variable ``VIDYA_LAB_CACHE`` set to a folder, a day already simulated
    with the very same arguments and package source is read back from it (:mod:`vidya_lab._cache`:
    the same result, without the minutes of a book's pages).
    """
    args = dict(locals())
    return _cache.call("simulate_day", _simulate_day, args)


def _simulate_day(replica, *, day, policy, cold_start, seed, dt_s, min_replicas, max_replicas,
                  headroom, router, pool, pool_size, mtbf_s, failures_at_s, margin, utilisation,
                  yesterday, start_s, duration_s, target, model, max_retries, queue_timeout_s,
                  workload, fidelity, cached_prefix_tokens) -> dict:
    """:func:`simulate_day`, computed."""
    if model is None:
        model = replica_model(as_replica(replica), cached_prefix_tokens=cached_prefix_tokens)
    v.check_instance("model", model, ReplicaModel, "ReplicaModel (see replica_model)")
    fleet = Fleet(model, min_replicas=min_replicas, max_replicas=max_replicas, headroom=headroom,
                  router=router, cold_start=_cold(cold_start)[0],
                  cold_start_s=_cold(cold_start)[1], pool=pool, pool_size=pool_size,
                  mtbf_s=mtbf_s, failures_at_s=failures_at_s, max_retries=max_retries,
                  queue_timeout_s=queue_timeout_s)
    pol = policy if not isinstance(policy, str) else make_policy(
        policy, model, day=day, lead_s=fleet.start_s, margin=margin, utilisation=utilisation,
        yesterday=yesterday, seed=seed)
    prof = day_profile(day)
    start = v.check_real("start_s", start_s, minimum=0.0)
    dur = v.check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    init = replicas_for_rate(float(prof.rate_per_s(np.array([start]))[0]), model, margin=margin,
                             utilisation=utilisation)
    target = tutor_slo() if target is None else v.check_instance("target", target, slo.SLO)
    if v.check_choice("fidelity", fidelity, FIDELITIES) == "fluid":
        run = simulate_fluid(prof, fleet, pol, horizon_s=start + dur, start_s=start,
                             initial_replicas=init, target=target)
        hours, summ = run.hourly(), run.summary()
    else:
        run, hours, summ = _fleet_day(prof, fleet, pol, workload, seed, dt_s, start, dur, init,
                                      target)
    return {"run": run, "summary": summ, "hours": hours,
            "replicas_by_hour": [h["replicas_mean"] for h in hours],
            "gpu_hours": run.gpu_hours, "cost_usd": run.cost_usd, "cold_start_s": fleet.start_s,
            "policy": pol, "model": model}
