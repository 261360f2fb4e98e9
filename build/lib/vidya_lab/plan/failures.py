"""Step 3 of the plan: losing a replica, or a node, at the peak — and the spares that cover it.

A **node** is the failure domain: its GPUs (:data:`FAILURE_DOMAIN_GPUS`, eight, the catalog's
``GPUS_PER_NODE``) share a host, its power and its network card, and a host failure takes all of
them. A node holds ``8 // g`` replicas of ``g`` GPUs (a replica of more than eight GPUs spans whole
nodes, and losing one of them loses that replica). The plan places the peak's ``R`` replicas evenly
on the fewest nodes that hold them, and never on fewer than :data:`MIN_FAILURE_DOMAINS` (two), so a
node's loss takes ``ceil(R / nodes)`` replicas (:func:`replicas_lost`): one node of eight one-GPU
replicas is the whole fleet of a small service, and two nodes halve it.

Spares are chapter 6's N + k: ``k`` replicas above what the policy asks for, all day (the fleet's
``headroom``). :func:`loss_window` simulates, request by request, the exam day busier than the
forecast by the plan's margin around its peak: the replicas of one node (or one replica) fail at
the peak, their requests are retried on the others, and the autoscaler replaces them a cold start
later. It reports the attainment of the requests arriving in the half hour after the loss (three
cold starts), on every target. :func:`spares_for` finds the fewest ``k`` that keep it at the
attainment target.
"""

from __future__ import annotations

import math

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import slo
from vidya_lab.catalog import GPUS_PER_NODE
from vidya_lab.plan.candidates import Candidate, day_curve, target
from vidya_lab.plan.confirm import MAX_SPARE_REPLICAS, Options, simulate
from vidya_lab.scenario import Scenario

#: GPUs that fail together: one node (the catalog's GPUs per node).
FAILURE_DOMAIN_GPUS = GPUS_PER_NODE
#: The window simulated around a loss: this long before it (the fleet settles), seconds ...
LOSS_LEAD_S = 900.0
#: ... and the half hour after it, whose arrivals are judged (three cold starts: the survivors carry
#: the peak until replacements serve, and their queues drain), seconds.
LOSS_HOUR_S = 1800.0
#: What can be lost at the peak.
LOSSES = ("replica", "node")
#: Nodes the peak's replicas are spread over, at the fewest.
MIN_FAILURE_DOMAINS = 2


def failure_domain(candidate: Candidate) -> dict:
    """``gpus_per_node`` (the failure domain), ``replicas_per_node`` (replicas one node's loss takes:
    8 // GPUs per replica, at least 1) and ``nodes_per_replica``."""
    v.check_instance("candidate", candidate, Candidate, "plan.Candidate")
    g = candidate.gpus_per_replica
    return {"gpus_per_node": FAILURE_DOMAIN_GPUS,
            "replicas_per_node": max(1, FAILURE_DOMAIN_GPUS // g),
            "nodes_per_replica": math.ceil(g / FAILURE_DOMAIN_GPUS)}


def replicas_lost(candidate: Candidate, loss: str, serving: int = 1) -> int:
    """Replicas a ``loss`` (``"replica"`` or ``"node"``) takes at once from a fleet of ``serving``
    replicas spread over ``max(2, nodes they fill)`` nodes (module docstring)."""
    v.check_choice("loss", loss, LOSSES)
    r = v.check_int("serving", serving, minimum=1, maximum=1_000_000)
    if loss == "replica":
        return 1
    dom = failure_domain(candidate)
    if dom["nodes_per_replica"] > 1:
        return 1
    nodes = max(MIN_FAILURE_DOMAINS, math.ceil(r / dom["replicas_per_node"]))
    return min(r, math.ceil(r / nodes))


def planned_peak(candidate: Candidate, scenario: Scenario, opts: Options, utilisation: float,
                 headroom: int) -> int:
    """Replicas the policy runs at the forecast's peak (its schedule's count, with its own 10 %
    margin) plus the spares: the fleet a loss at the peak hits."""
    from vidya_lab import autoscaling
    from vidya_lab.plan.candidates import peak_rps
    from vidya_lab.plan.confirm import candidate_model

    return headroom + autoscaling.replicas_for_rate(
        peak_rps(scenario, opts.day), candidate_model(candidate, scenario), margin=0.1,
        utilisation=utilisation)


def peak_time_s(scenario: Scenario, day: str = "exam") -> float:
    """The busiest minute of the day's curve, seconds from midnight."""
    t = np.arange(0.0, 86400.0, 60.0)
    return float(t[int(np.argmax(day_curve(scenario, day).rate_per_s(t)))])


def loss_window(candidate: Candidate, scenario: Scenario, opts: Options, *, utilisation: float,
                headroom: int, loss: str = "node", traffic_factor: float | None = None) -> dict:
    """The half hour after losing a ``loss`` at the peak of the day ``traffic_factor`` × the forecast
    (default 1 + the plan's margin), with ``headroom`` spares (module docstring).

    Returns ``loss``, ``lost_replicas``, ``at_s`` (the peak, s from midnight), ``headroom``,
    ``attainment`` (0..1, every target, arrivals of the :data:`LOSS_HOUR_S` after the loss),
    ``arrived``, ``retried``, ``serving_before`` (replicas just before the loss), ``window_s``,
    ``ttft_p99_s``, ``tpot_p99_s`` and ``longest_gap_p99_s`` (finished requests of that window).
    """
    lost = replicas_lost(candidate, loss,
                         planned_peak(candidate, scenario, opts, utilisation, headroom))
    factor = 1.0 + opts.traffic_margin if traffic_factor is None else traffic_factor
    at = peak_time_s(scenario, opts.day)
    start = max(0.0, at - LOSS_LEAD_S)
    out = simulate(candidate, scenario, opts, utilisation=utilisation, headroom=headroom,
                   traffic_factor=factor, failures_at_s=(at,) * lost, start_s=start,
                   duration_s=at + LOSS_HOUR_S - start)
    run = out["run"]
    ok = run.meets(target(scenario))
    sel = (run.arrival_s >= at) & (run.arrival_s < at + LOSS_HOUR_S)
    done = run.outcome_codes >= 0
    hour = sel[done] & (run.timelines.outcome == slo.FINISHED)
    tl = run.timelines[hour]
    gaps = run.longest_gap_s[done][hour]
    s = run.series  # the step recorded just before the loss (the loss's own step records after it)
    before = s["serving"][max(0, int(np.searchsorted(s["t_s"], at, side="left")) - 1)]
    return {"loss": loss, "lost_replicas": lost, "at_s": at, "window_s": LOSS_HOUR_S,
            "headroom": headroom,
            "utilisation": utilisation, "traffic_factor": factor,
            "attainment": float(np.mean(ok[sel])) if sel.any() else None,
            "arrived": int(np.count_nonzero(sel)), "retried": int(np.count_nonzero(run.retries)),
            "serving_before": int(before),
            "ttft_p99_s": _p99(slo.ttft_s(tl)), "tpot_p99_s": _p99(slo.tpot_s(tl)),
            "longest_gap_p99_s": _p99(gaps)}


def _p99(x) -> float | None:
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x)]
    return float(np.percentile(x, 99)) if x.size else None


def spares_for(candidate: Candidate, scenario: Scenario, opts: Options, *, utilisation: float,
               loss: str = "node", start: int = 0, tries: list | None = None) -> tuple[int, dict]:
    """The fewest spares ``k`` (from ``start`` up, then down while it still holds) whose
    :func:`loss_window` meets the attainment target; ``(k, its window)``. Every window simulated is
    appended to ``tries``. A ``ValueError`` when :data:`MAX_SPARE_REPLICAS` do not suffice."""
    k = v.check_int("start", start, minimum=0, maximum=MAX_SPARE_REPLICAS)
    seen: dict[int, dict] = {}

    def held(n: int) -> bool:
        if n not in seen:
            seen[n] = loss_window(candidate, scenario, opts, utilisation=utilisation, headroom=n,
                                  loss=loss)
            if tries is not None:
                tries.append(seen[n])
        a = seen[n]["attainment"]
        return a is not None and a >= scenario.attainment_target

    while not held(k):
        if k >= MAX_SPARE_REPLICAS:
            raise ValueError(f"{candidate.label} at utilisation {utilisation:g}: "
                             f"{MAX_SPARE_REPLICAS} spares do not hold the hour after losing a "
                             f"{loss} at the peak")
        k += 1
    while k > 0 and held(k - 1):
        k -= 1
    return k, seen[k]
