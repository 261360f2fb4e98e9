"""How the fleet is run (:class:`Fleet`), what a simulated window produced (:class:`FleetRun`),
and the stated limits that keep every run within this machine (2 cores, 24 GB).

Every limit is checked before any work starts, with the limit in the message
(:func:`vidya_lab._validate.check_work`):

====================================  ==========================================================
:data:`MAX_REPLICAS`                   replicas a fleet may grow to (its arrays grow with the
                                       replicas it actually starts, never with the bound)
:data:`MAX_STEPS`                      time steps of one simulation (window + drain) ÷ ``dt_s``
:data:`MAX_REQUESTS`                   requests of one simulation
:data:`MAX_WAITING_WORK`               steps × the most requests that can wait at once (arrivals
                                       in any ``queue_timeout_s`` window): the waiting room's work
:data:`MAX_START_S`                    the longest cold start (seconds)
====================================  ==========================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import slo
from vidya_lab.autoscaling.cold_start import MAX_START_S, POOLS, ColdStart, pool_start_s
from vidya_lab.autoscaling.replica import ReplicaModel

ROUTERS = ("round_robin", "least_loaded")
OFF, STARTING, SERVING, DRAINING = 0, 1, 2, 3
STATE_NAMES = ("off", "starting", "serving", "draining")

#: The most replicas a fleet may have (serving + starting). Memory and time grow with the replicas
#: a run actually starts, not with this bound; at the bound a fleet's batch arrays are about 70 MB.
MAX_REPLICAS = 4096
#: The most time steps one fleet simulation may take (its window plus the drain after it): five
#: days at a 1 s step. An idle step costs about 0.1 ms, a busy exam-day step about 0.3 ms.
MAX_STEPS = 500_000
#: The most requests one simulation may hold: about eleven of Tanvi's exam days (≈ 200 bytes
#: each while it runs, so about 4 GB at the bound).
MAX_REQUESTS = 20_000_000
#: Steps × the most requests that can wait at once: the waiting room's work bound (about 15 ns per
#: unit, so about a minute at the bound). An exam day at 5 s steps with the 60 s patience is 7e7.
MAX_WAITING_WORK = 4e9


@dataclass(frozen=True, eq=False)
class Fleet:
    """How the fleet is run: limits, router, cold start, pools, failures and patience.

    Parameters
    ----------
    model : the coarse replica (:func:`~vidya_lab.autoscaling.replica.replica_model`).
    min_replicas, max_replicas : bounds on serving + starting replicas (``max_replicas`` ≤
        :data:`MAX_REPLICAS`).
    headroom : N+k: replicas added on top of every policy's count (before the bounds).
    router : ``"round_robin"`` (default) or ``"least_loaded"`` (fewest requests in batch and queue,
        ties to the lowest index). In this model a request's cost is front-loaded (its prefill),
        and least-loaded sends the next several arrivals to the emptiest replica, whose prefill
        server then queues them: round robin spreads prefills evenly and has the lower TTFT tail
        (and least-loaded's step-start snapshot makes it worse at coarse steps).
    cold_start : the parts of a cold start; its total is the start time unless ``cold_start_s``.
    cold_start_s : a cold start in seconds, overriding ``cold_start`` (e.g. 0 for "instant"; at
        most :data:`MAX_START_S`).
    pool : ``"none"``, ``"warm"`` (nodes ready with image and weights on NVMe) or ``"sleep"``
        (engines loaded and asleep); ``pool_size`` such nodes are kept and billed.
    pool_size : nodes in the pool.
    mtbf_s : mean time between failures of one serving replica, seconds (``None``: none).
    failures_at_s : times at which the busiest serving replica fails, seconds.
    max_retries : how many times a failed request is retried before it is turned away.
    queue_timeout_s : a request still waiting this long after it arrived is turned away, seconds.
    interval_s : the autoscaler's tick, seconds (HPA's sync period is 15 s).
    """

    model: ReplicaModel
    min_replicas: int = 1
    max_replicas: int = 64
    headroom: int = 0
    router: str = "round_robin"
    cold_start: ColdStart = field(default_factory=ColdStart)
    cold_start_s: float | None = None
    pool: str = "none"
    pool_size: int = 0
    mtbf_s: float | None = None
    failures_at_s: tuple[float, ...] = ()
    max_retries: int = 1
    queue_timeout_s: float = 60.0
    interval_s: float = 15.0

    def __post_init__(self) -> None:
        v.check_instance("model", self.model, ReplicaModel, "ReplicaModel (see replica_model)")
        lo = v.check_int("min_replicas", self.min_replicas, minimum=0, maximum=MAX_REPLICAS)
        v.check_int("max_replicas", self.max_replicas, minimum=max(lo, 1), maximum=MAX_REPLICAS)
        v.check_int("headroom", self.headroom, minimum=0, maximum=MAX_REPLICAS)
        v.check_choice("router", self.router, ROUTERS)
        v.check_instance("cold_start", self.cold_start, ColdStart)
        if self.cold_start_s is not None:
            v.check_real("cold_start_s", self.cold_start_s, minimum=0.0, maximum=MAX_START_S)
        v.check_choice("pool", self.pool, POOLS)
        v.check_int("pool_size", self.pool_size, minimum=0, maximum=MAX_REPLICAS)
        if self.mtbf_s is not None:
            v.check_real("mtbf_s", self.mtbf_s, minimum=0.0, min_inclusive=False)
        times = v.check_reals("failures_at_s", self.failures_at_s, minimum=0.0,
                              max_length=100_000)
        object.__setattr__(self, "failures_at_s", tuple(sorted(float(t) for t in times)))
        v.check_int("max_retries", self.max_retries, minimum=0, maximum=100)
        v.check_real("queue_timeout_s", self.queue_timeout_s, minimum=0.0, min_inclusive=False)
        v.check_real("interval_s", self.interval_s, minimum=0.0, min_inclusive=False,
                     maximum=86400.0)
        if self.cold_start_s is None:
            v.check_real("the cold start (cold_start.total_s)", self.start_s, maximum=MAX_START_S)

    @property
    def start_s(self) -> float:
        """Seconds from "scale up" to serving for a replica that does not come from a pool."""
        if self.cold_start_s is not None:
            return float(self.cold_start_s)
        return self.cold_start.total_s(self.model.replica)

    @property
    def pool_start_s(self) -> float:
        """Seconds from "scale up" to serving for a replica taken from the pool."""
        if self.pool == "none":
            return self.start_s
        return min(self.start_s, pool_start_s(self.cold_start, self.model.replica, self.pool))


@dataclass(frozen=True, eq=False)
class FleetRun:
    """What happened over a simulated window.

    Attributes
    ----------
    timelines : every request's :class:`vidya_lab.slo.Timelines` (``in flight`` ones have outcome
        code -1 in ``outcome_codes`` and are left out of ``timelines``).
    outcome_codes : per request: 0 finished, 1 rejected, -1 still in flight at the end.
    retries : per request, how many times it was retried after a replica failed.
    arrival_s : per request, arrival time, seconds.
    series : per step arrays (``t_s``, ``serving``, ``starting``, ``draining``, ``billed``
        (replicas being paid for, pool included), ``pool``, ``in_batch``, ``waiting``).
    events : ``(t_s, kind, replica, detail)`` tuples: ``scale_up``, ``cancel``, ``drain``,
        ``released``, ``ready``, ``failure``.
    gpu_hours : GPU-hours billed (replicas + pool nodes), hours.
    cost_usd : gpu_hours × the GPU's catalog price, USD.
    start_s : the replica start time used (no pool), seconds.
    dt_s, horizon_s : the step and the window simulated, seconds.
    fleet, policy : the inputs.
    beyond_horizon : requests of the workload that arrive at or after ``horizon_s`` and so were not
        simulated (they are not arrivals of this window; counted so none goes missing unseen).
    longest_gap_s : per request, the longest gap between two of its tokens, seconds (the replica
        model's stated tail, :meth:`~vidya_lab.autoscaling.ReplicaModel.stall_s`; NaN for a
        one-token answer or an unfinished request); what an ITL target is judged on.
    """

    timelines: slo.Timelines
    outcome_codes: np.ndarray
    retries: np.ndarray
    arrival_s: np.ndarray
    series: dict
    events: list
    gpu_hours: float
    cost_usd: float
    start_s: float
    dt_s: float
    horizon_s: float
    fleet: Fleet
    policy: object
    beyond_horizon: int = 0
    longest_gap_s: np.ndarray | None = None

    def counts(self) -> dict[str, int]:
        """``arrived``, ``finished``, ``rejected``, ``in_flight``, ``retried``, ``failures``,
        ``beyond_horizon``: arrived = finished + rejected + in_flight."""
        oc = self.outcome_codes
        return {"arrived": int(oc.size), "finished": int(np.count_nonzero(oc == slo.FINISHED)),
                "rejected": int(np.count_nonzero(oc == slo.REJECTED)),
                "in_flight": int(np.count_nonzero(oc < 0)),
                "retried": int(np.count_nonzero(self.retries > 0)),
                "failures": sum(1 for e in self.events if e[1] == "failure"),
                "beyond_horizon": int(self.beyond_horizon)}

    def meets(self, target: slo.SLO) -> np.ndarray:
        """Per request (all arrivals, in order): finished within every target."""
        v.check_instance("target", target, slo.SLO, "slo.SLO")
        ok = np.zeros(self.outcome_codes.size, dtype=bool)
        done = self.outcome_codes >= 0
        gaps = None if self.longest_gap_s is None else self.longest_gap_s[done]
        ok[done] = slo.meets_slo(self.timelines, target, longest_gap_s=gaps)
        return ok
