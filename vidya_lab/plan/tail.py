"""The tail, not the mean: what a fleet is sized with.

Chapter 2's calculator compares a steady *mean* TPOT with a target that holds at the p99: at its
own capacity half of the requests are slower than the mean, and a replica planned at 80 % of it
misses the attainment target in chapter 5's simulator. Two numbers here replace the mean:

* :func:`tail_utilisation` — the highest utilisation, in steps of 5 %, at which the iteration-level
  simulator (:mod:`vidya_lab.admission`) meets the attainment target over an hour of steady Poisson
  load with the scenario's lengths (lognormal questions and answers). Utilisation keeps the book's
  one definition (offered requests/s ÷ the calculator's capacity, :func:`sizing.capacity_rps`);
  chapter 2's headline is sized at it, and a test pins that the simulator meets it.
* :func:`itl_budget` — the token budget that keeps every gap between two tokens within the ITL
  target: chapter 5's stall-free budget (:func:`vidya_lab.admission.stall_free_budget`), with the
  scenario's ITL target as the stall it must not exceed.

:func:`replica_window` is the iteration-level simulator on one replica at a steady rate, summarised
(attainment of every target, TTFT, TPOT and ITL percentiles): what the capstone shows at the
busiest load its plan runs a replica at.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from vidya_lab import _cache, admission, sizing, slo
from vidya_lab import _validate as v
from vidya_lab.scenario import TANVI, Scenario
from vidya_lab.workload import poisson_arrivals, tutor_requests

#: Utilisations :func:`tail_utilisation` tries, busiest first (steps of 5 %, from just above the
#: calculator's 80 %).
TAIL_UTILISATIONS = tuple(round(0.85 - 0.05 * i, 2) for i in range(12))
#: Seconds of steady load each try simulates (an hour: about 7,000 requests on chapter 2's replica).
TAIL_WINDOW_S = 3600.0


def scenario_slo(scenario: Scenario, *, itl: bool = True) -> slo.SLO:
    """The scenario's per-request targets: TTFT, TPOT and (``itl``) the longest gap between tokens."""
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    return slo.SLO(ttft_s=scenario.ttft_target_s, tpot_s=scenario.tpot_target_s,
                   itl_s=scenario.itl_target_s if itl else None)


def replica_window(replica: sizing.Replica, rate_per_s: float, scenario: Scenario = TANVI, *,
                   cached_tokens: int = 0, duration_s: float = TAIL_WINDOW_S, seed: int = 0,
                   target: slo.SLO | None = None) -> dict:
    """One replica under ``rate_per_s`` of the scenario's requests for ``duration_s``, simulated one
    iteration at a time (chunked prefill at the replica's token budget, ``cached_tokens`` of every
    prompt in its prefix cache).

    Returns ``rate_per_s``, ``requests``, ``attainment`` (every target of ``target``, default the
    scenario's with ITL), ``attainment_ttft_tpot`` (TTFT and TPOT only), ``ttft_p99_s``,
    ``tpot_p99_s``, ``itl_p50_s``, ``itl_p99_s``, ``itl_max_s`` (every gap between two tokens of
    every finished request) and ``longest_gap_p99_s`` (the p99 of each request's longest gap).

    Read back from ``VIDYA_LAB_CACHE`` when set and this very call is there
    (:mod:`vidya_lab._cache`)."""
    return _cache.call("replica_window", _replica_window, dict(locals()))


def _replica_window(replica, rate_per_s, scenario, cached_tokens, duration_s, seed, target):
    """:func:`replica_window`, computed."""
    sizing._as_replica(replica)
    rate = v.check_real("rate_per_s", rate_per_s, minimum=0.0, min_inclusive=False, maximum=1e4)
    dur = v.check_real("duration_s", duration_s, minimum=1.0, maximum=86400.0)
    target = scenario_slo(scenario) if target is None else v.check_instance("target", target,
                                                                             slo.SLO)
    w = tutor_requests(poisson_arrivals(rate, dur, seed=v.check_int("seed", seed, minimum=0)),
                       seed=seed + 1, scenario=scenario)
    cfg = admission.SchedulerConfig(cached_prefix_tokens=cached_tokens)
    t = admission.simulate(replica, w, cfg).timelines
    itl = slo.itl_s(t)
    gaps = slo.longest_gap_s(t)
    plain = slo.SLO(ttft_s=target.ttft_s, tpot_s=target.tpot_s)
    return {"rate_per_s": rate, "requests": len(t), "attainment": slo.attainment(t, target),
            "attainment_ttft_tpot": slo.attainment(t, plain),
            "ttft_p99_s": float(np.nanpercentile(slo.ttft_s(t), 99)),
            "tpot_p99_s": float(np.nanpercentile(slo.tpot_s(t), 99)),
            "itl_p50_s": float(np.percentile(itl, 50)), "itl_p99_s": float(np.percentile(itl, 99)),
            "itl_max_s": float(itl.max()),
            "longest_gap_p99_s": float(np.nanpercentile(gaps, 99))}


@functools.lru_cache(maxsize=32)  # chapter 2, the reconciliation and the tests ask again
def _tail(replica, scenario, target, cached_tokens, duration_s, seed) -> dict:
    cap = sizing.capacity_rps(replica, scenario.prompt_tokens_mean, scenario.answer_tokens_mean,
                              scenario.tpot_target_s, cached_tokens=cached_tokens)
    tried = []
    for u in TAIL_UTILISATIONS:
        w = replica_window(replica, u * cap, scenario, cached_tokens=cached_tokens,
                           duration_s=duration_s, seed=seed, target=target)
        tried.append({"utilisation": u, "attainment": w["attainment"],
                      "tpot_p99_s": w["tpot_p99_s"], "ttft_p99_s": w["ttft_p99_s"]})
        if w["attainment"] >= scenario.attainment_target:
            return {"utilisation": u, "capacity_rps": cap, "rate_per_s": u * cap,
                    "attainment": w["attainment"], "tried": tried}
    raise ValueError(f"the iteration-level simulator misses the attainment target "
                     f"{scenario.attainment_target:.0%} even at {TAIL_UTILISATIONS[-1]:.0%} of "
                     f"capacity on this replica; relax a target")


def tail_utilisation(replica: sizing.Replica, scenario: Scenario = TANVI, *, itl: bool = False,
                     cached_tokens: int = 0, duration_s: float = TAIL_WINDOW_S,
                     seed: int = 0) -> dict:
    """The busiest utilisation (of :data:`TAIL_UTILISATIONS`) at which the iteration-level simulator
    meets the scenario's attainment target on one replica (module docstring).

    ``itl``: judge the ITL target too (chapter 2 judges TTFT and TPOT, its promise; the token budget
    that keeps the gaps is chapter 5's). Returns ``utilisation``, ``capacity_rps`` (the
    calculator's, requests/s), ``rate_per_s`` (the per-replica rate that holds the tail),
    ``attainment`` and ``tried`` (each utilisation tried, with its attainment and p99s).
    """
    sizing._as_replica(replica)
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    k = v.check_cached_tokens(cached_tokens, scenario.prompt_tokens_mean)
    dur = v.check_real("duration_s", duration_s, minimum=60.0, maximum=86400.0)
    out = _tail(replica, scenario, scenario_slo(scenario, itl=v.check_bool("itl", itl)), k, dur,
                v.check_int("seed", seed, minimum=0))
    return {**out, "tried": [dict(x) for x in out["tried"]]}


def tail_replicas(replica: sizing.Replica, peak_rps: float, scenario: Scenario = TANVI,
                  **kwargs) -> dict:
    """Replicas for ``peak_rps`` sized with the tail: ceil(peak ÷ (capacity × tail utilisation)).

    ``kwargs`` as :func:`tail_utilisation`. Returns its dict plus ``replicas``, ``gpus`` and
    ``utilisation_at_peak`` (peak ÷ (replicas × capacity): the rounding up leaves a little more).
    """
    peak = v.check_real("peak_rps", peak_rps, minimum=0.0, min_inclusive=False, maximum=1e6)
    t = tail_utilisation(replica, scenario, **kwargs)
    n = math.ceil(peak / t["rate_per_s"])
    return {**t, "replicas": n, "gpus": n * replica.n_gpus,
            "utilisation_at_peak": peak / (n * t["capacity_rps"])}


def itl_budget(replica: sizing.Replica, scenario: Scenario = TANVI,
               cached_tokens: int = 0) -> int | None:
    """The largest token budget per iteration (of chapter 5's choices) whose fullest iteration, at
    the batch the replica runs, stays within the scenario's ITL target; ``None`` when none does."""
    sizing._as_replica(replica)
    try:
        return admission.stall_free_budget(replica, scenario.prompt_tokens_mean,
                                           scenario.answer_tokens_mean, scenario.tpot_target_s,
                                           cached_tokens, stall_target_s=scenario.itl_target_s)
    except ValueError:
        return None
