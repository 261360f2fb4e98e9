"""Chapter 6's exercise data: Tanvi's replica, the runs the chapter and its exercises share, and
the numbers each reader may be given.

Every run here is seeded and cached, so the chapter's text, its solutions and the checks of the
answer key (``key/ch06.py``) read the same simulations once per kernel. The helpers that depend on
a given take the reader's own value (:func:`~vidya_lab.exercises.givens.given`) when called without
an argument, else the book's.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from vidya_lab import autoscaling, caching, layouts, procurement, sizing
from vidya_lab.exercises.givens import Pick, given, my_givens
from vidya_lab.scenario import TANVI

__all__ = ["GIVENS", "my_givens", "replica", "model", "cold_start", "rush_rate_per_s",
           "cold_start_runs", "first_exam_morning", "failure_table", "failure_runs", "exam_day",
           "fleet_size", "routing", "routing_rows", "reserve_for", "failover_grid"]

CHAPTER = 6
H = autoscaling.SECONDS_PER_HOUR
#: The morning window the cold starts and failures are compared on (hours of an exam day), its
#: seed and the fleet's step (seconds).
MORNING_H = (4.5, 8.0)
MORNING_SEED = 1
DT_S = 10.0
#: The whole exam day: the seed, step and bound of ``plan.reconcile.fleet_sizes`` ("chapter 6").
DAY_SEED, DAY_DT_S, DAY_MAX_REPLICAS = 0, 10.0, 256
#: The moment a replica (or a region) is lost, hours of the day.
FAILURE_AT_H = 7.0
#: Exercise 6.4: a lean fleet (80 % utilisation, scheduled, no spare, failed requests not retried)
#: over this window of the exam day.
FAILURE_WINDOW_H = (6.5, 7.5)
FAILURE_UTILISATION = 0.8
#: The settings of the N+k table (exercise 6.9): policies and spare replicas.
TABLE_POLICIES = ("reactive", "predictive", "scheduled")
TABLE_SPARES = (0, 1)
#: The routing study: a tutor trace with follow-up turns (chapter 4's conversations) at the rush.
ROUTING_REQUESTS, ROUTING_SEED, ROUTING_TURNS = 6000, 4, 4
#: The second region: spare replicas per region tried, and the two cold starts.
FAILOVER_SPARES = (0, 1, 2, 3, 4)

GIVENS = {
    "provision_s": Pick(180.0, (60.0, 120.0, 300.0, 450.0, 600.0, 900.0), unit="s",
                        about="how long your cloud takes to give you a GPU node"),
    "peak_rps": Pick(60.0, (45.0, 75.0, 90.0, 105.0, 120.0), unit="requests/s",
                     about="your forecast of the exam peak"),
    "reserved_ratio": Pick(0.85, (0.5, 0.6, 0.7, 0.8), about="your provider's reserved ÷ "
                                                            "on-demand price"),
    "failover_target": Pick(0.99, (0.9, 0.9999), about="attainment you need in the hour after "
                                                       "losing a region"),
}


@cache
def replica() -> sizing.Replica:
    """Tanvi's replica in this chapter: her model on 4 x H100 (the smallest tp that fits)."""
    gpu = TANVI.candidate_gpu_ids[0]
    return sizing.Replica(TANVI.model_id, gpu, tp=layouts.reference_tp(TANVI.model_id, gpu))


@cache
def model() -> autoscaling.ReplicaModel:
    """The coarse replica of the fleet (no prefix cache counted: the cold-cache case)."""
    return autoscaling.replica_model(replica())


def cold_start(provision_s: float | None = None) -> autoscaling.ColdStart:
    """The sourced cold start with ``provision_s`` seconds of provisioning (default: the reader's
    ``provision_s``, the book's 180 s)."""
    p = given(CHAPTER, "provision_s", GIVENS["provision_s"].default) if provision_s is None \
        else provision_s
    return autoscaling.ColdStart(provision_s=float(p))


#: The story's eight minutes: the fast end of provisioning, with a compile cache.
FAST_COLD = autoscaling.ColdStart(provision_s=autoscaling.PROVISION_RANGE_S[0],
                                  compile_s=autoscaling.CACHED_COMPILE_S)
#: A scarce GPU node: the slow end of the published provisioning range.
SLOW_COLD = autoscaling.ColdStart(provision_s=autoscaling.PROVISION_RANGE_S[1])


def rush_rate_per_s() -> float:
    """The exam day's arrival rate at TANVI.rush_hour, requests/s."""
    return float(autoscaling.day_profile("exam").rate_per_s([TANVI.rush_hour * H])[0])


@cache
def _morning_workload():
    start, end = MORNING_H
    return autoscaling.day_workload("exam", seed=MORNING_SEED, start_s=start * H,
                                    duration_s=(end - start) * H)


def _morning(policy, **kw) -> dict:
    start, end = MORNING_H
    return autoscaling.simulate_day(replica(), day="exam", policy=policy, seed=MORNING_SEED,
                                    dt_s=DT_S, start_s=start * H, duration_s=(end - start) * H,
                                    model=model(), workload=_morning_workload(), **kw)


@cache
def cold_start_runs() -> dict:
    """The exam morning under the reactive policy with four cold starts: the sourced one, the
    story's fast end, a scarce node's slow end, and an instant one."""
    return {"sourced": _morning("reactive"), "fast end": _morning("reactive", cold_start=FAST_COLD),
            "slow end": _morning("reactive", cold_start=SLOW_COLD),
            "instant": _morning("reactive", cold_start=0.0)}


@cache
def first_exam_morning() -> dict:
    """The first exam morning under the predictive policy, learning from an ordinary day: with its
    live (reactive) floor, and with the forecast alone."""
    lead = autoscaling.ColdStart().total_s(replica())
    pol = autoscaling.make_policy("predictive", model(), day="exam", lead_s=lead,
                                  yesterday="normal", seed=MORNING_SEED)
    return {"forecast and live load": _morning(pol), "forecast alone": _morning(replace(pol,
                                                                                   live=None))}


@cache
def failure_table() -> dict:
    """The exam morning with a replica lost at 7 am, for each policy and N+k of the table."""
    fail = (FAILURE_AT_H * H,)
    return {(p, k): _morning(p, headroom=k, failures_at_s=fail)
            for p in TABLE_POLICIES for k in TABLE_SPARES}


@cache
def failure_runs() -> tuple[dict, dict]:
    """Exercise 6.4's two runs of the exam window: without and with a replica lost at 7 am."""
    start, end = FAILURE_WINDOW_H
    kw = dict(day="exam", policy="scheduled", seed=0, dt_s=DT_S, start_s=start * H,
              duration_s=(end - start) * H, model=model(), utilisation=FAILURE_UTILISATION,
              max_retries=0)
    base = autoscaling.simulate_day(replica(), **kw)
    hit = autoscaling.simulate_day(replica(), failures_at_s=(FAILURE_AT_H * H,), **kw)
    return base, hit


@cache
def exam_day() -> dict:
    """A whole exam day under each policy, on the same arrivals (``plan.reconcile``'s settings)."""
    work = autoscaling.day_workload("exam", seed=DAY_SEED)
    return {p: autoscaling.simulate_day(replica(), day="exam", policy=p, seed=DAY_SEED,
                                        dt_s=DAY_DT_S, max_replicas=DAY_MAX_REPLICAS,
                                        model=model(), workload=work)
            for p in autoscaling.POLICIES}


def fleet_size() -> dict:
    """The chapter's fleet: the most replicas the scheduled exam day runs (serving, starting and
    draining), as ``plan.reconcile.fleet_sizes`` reports it for "chapter 6": ``replicas``,
    ``gpus``, ``peak_rps`` and ``utilisation`` at the peak (:func:`autoscaling.utilisation`)."""
    n = int(exam_day()["scheduled"]["summary"]["max_replicas"])
    return {"replicas": n, "gpus": n * replica().n_gpus, "peak_rps": TANVI.exam_peak_rps,
            "utilisation": autoscaling.utilisation(TANVI.exam_peak_rps, n, model())}


@cache
def routing() -> dict:
    """The routing study: ``trace`` (the tutor trace at the 7 am rate), ``replicas`` (the fleet
    the rush needs at the target utilisation) and ``runs`` (policy → RoutedCache)."""
    rate = rush_rate_per_s()
    n = autoscaling.replicas_for_rate(rate, model())
    trace = caching.tutor_trace(ROUTING_REQUESTS, seed=ROUTING_SEED, turns_mean=ROUTING_TURNS,
                                rate_per_s=rate)
    runs = {p: autoscaling.replay_routed(trace, replica(), n, p)
            for p in autoscaling.ROUTING_POLICIES}
    return {"trace": trace, "replicas": n, "rate_per_s": rate, "runs": runs}


def routing_rows(peak_rps: float | None = None) -> list[dict]:
    """For no cache counted and each router: the cached tokens per request, one replica's
    capacity, and the replicas (and GPUs) ``peak_rps`` needs with the busiest replica at the
    target utilisation: ceil(peak × busiest share ÷ (capacity × target)). Default peak: the
    reader's ``peak_rps`` (the book's: the exam peak)."""
    peak = given(CHAPTER, "peak_rps", GIVENS["peak_rps"].default) if peak_rps is None \
        else peak_rps
    study = routing()
    any_run = next(iter(study["runs"].values()))
    kw = dict(prompt_tokens=any_run.prompt_tokens_mean, answer_tokens=any_run.answer_tokens_mean,
              tpot_target_s=TANVI.tpot_target_s)
    rows = [("no cache counted", None)] + list(study["runs"].items())
    out = []
    for name, run in rows:
        cap = autoscaling.routed_capacity(replica(), run, **kw)
        share = 1.0 if run is None else run.busiest_share
        n = replicas_at(peak, cap, share)
        out.append({"router": name, "cached_tokens": 0.0 if run is None else run.cached_tokens_mean,
                    "busiest_share": share, "capacity_rps": cap, "replicas": n,
                    "gpus": n * replica().n_gpus})
    return out


def replicas_at(rate_per_s: float, capacity_rps: float, busiest_share: float = 1.0) -> int:
    """ceil(rate × busiest share ÷ (capacity × TARGET_UTILISATION)): replicas that keep the busiest
    one at the target utilisation."""
    u = autoscaling.TARGET_UTILISATION
    return int(-(-(rate_per_s * busiest_share) // (capacity_rps * u)))


def reserve_for(ratio: float | None = None) -> int:
    """Replicas to reserve for the scheduled exam day at a reserved ÷ on-demand price ``ratio``
    (default: the reader's ``reserved_ratio``)."""
    rho = given(CHAPTER, "reserved_ratio", GIVENS["reserved_ratio"].default) if ratio is None \
        else ratio
    return procurement.reserved_replicas(exam_day()["scheduled"]["replicas_by_hour"], rho)


@cache
def failover_grid() -> dict:
    """The surviving region when the other is lost at 7 am: (cold start, spare per region) →
    :func:`autoscaling.failover`, for the sourced cold start and a scarce node's."""
    out = {}
    for name, cold in (("sourced", None), ("slow end", SLOW_COLD)):
        for k in FAILOVER_SPARES:
            out[(name, k)] = autoscaling.failover(replica(), spare=k, cold_start=cold,
                                                  lost_at_s=FAILURE_AT_H * H, model=model(),
                                                  dt_s=DT_S)
    return out


def growth_over_cold_start(cold_s: float, hours: tuple[float, float] = MORNING_H,
                           step_s: float = 300.0) -> dict:
    """How much the exam load grows within one cold start: rate(t + cold_s) ÷ rate(t) every
    ``step_s`` over ``hours``. Returns ``t_h``, ``ratio`` and the largest (``max_ratio`` at
    ``max_at_h``); a fleet sized at the target utilisation u saturates where it exceeds 1 / u."""
    import numpy as np

    prof = autoscaling.day_profile("exam")
    t = np.arange(hours[0] * H, hours[1] * H, step_s)
    ratio = prof.rate_per_s(t + cold_s) / prof.rate_per_s(t)
    i = int(np.argmax(ratio))
    return {"t_h": t / H, "ratio": ratio, "max_ratio": float(ratio[i]), "max_at_h": float(t[i] / H)}
