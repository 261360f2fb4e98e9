"""Step 2 of the plan: the simulated days a candidate must survive.

:func:`simulate` runs one day (or a window of one) of a candidate's fleet: the autoscaling policy
plans for the forecast; the day it meets is busier by ``traffic_factor`` (the plan's margin,
default +20 %: forecasts of exam traffic are that far off); replicas are chapter 6's coarse model of
the candidate as it runs (its token budget, its prefix cache under the isolation, the prefixes it
holds once), judged on every target of the scenario — TTFT, TPOT and the longest gap between two
tokens (the model's stated tail, checked against the iteration-level simulator in the tests).
``fidelity="fluid"`` runs chapter 6's fluid fleet instead (attainment, replicas and the bill in a
fraction of a second); ``failures_at_s`` loses the busiest serving replica at each time given (a
node's replicas at once when the time repeats), on the request-level fleet.

Utilisation is the book's one definition: offered requests/s ÷ (replicas × one replica's capacity),
capacity being the rate a replica sustains within the targets
(:func:`vidya_lab.autoscaling.utilisation`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from vidya_lab import _validate as v
from vidya_lab import autoscaling
from vidya_lab.autoscaling.cold_start import MAX_PREFIX_TOKENS
from vidya_lab.autoscaling.day import DAYS, SECONDS_PER_DAY
from vidya_lab.plan.candidates import Candidate, day_curve, target
from vidya_lab.scenario import Scenario

#: Target utilisations the autoscaling policy is tried at, busiest (cheapest) first.
UTILISATIONS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4)
#: Spare replicas (N+k) the search may add against losing a replica or a node at the peak.
MAX_SPARE_REPLICAS = 16
#: Candidates (one per GPU type and precision, cheapest by the calculator first) the search
#: simulates; the others are listed with their calculator cost.
MAX_CONFIRMED_CANDIDATES = 4
#: The fleet simulation's time step in the planner, seconds.
PLAN_DT_S = 10.0
#: Largest fleet a simulated day may grow to, replicas.
PLAN_MAX_REPLICAS = 256
#: Longest cold start the planner takes, seconds (four hours: longer than any morning rush).
MAX_COLD_START_S = 4 * 3600.0
#: Largest forecast error a plan is confirmed against (+200 % traffic).
MAX_TRAFFIC_MARGIN = 2.0


@dataclass(frozen=True)
class Options:
    """How the plan is confirmed (see :func:`vidya_lab.plan.plan` for each). ``cached_prefix_tokens``
    is what one shared cache would hold; each candidate carries the cache its isolation leaves
    (:attr:`Candidate.cached_tokens`), which is what the simulations use."""

    day: str = "exam"
    policy: str = "scheduled"
    cold_start_s: float | None = None
    cached_prefix_tokens: int = 0
    traffic_margin: float = 0.2
    seed: int = 0
    dt_s: float = PLAN_DT_S

    def __post_init__(self) -> None:
        v.check_choice("day", self.day, DAYS)
        v.check_choice("policy", self.policy, autoscaling.POLICIES)
        if self.cold_start_s is not None:  # a start longer than the rush makes autoscaling moot
            v.check_real("cold_start_s", self.cold_start_s, minimum=0.0, maximum=MAX_COLD_START_S)
        v.check_int("cached_prefix_tokens", self.cached_prefix_tokens, minimum=0,
                    maximum=MAX_PREFIX_TOKENS)
        v.check_real("traffic_margin", self.traffic_margin, minimum=0.0, maximum=MAX_TRAFFIC_MARGIN)
        v.check_int("seed", self.seed, minimum=0)
        v.check_real("dt_s", self.dt_s, minimum=0.1, maximum=60.0)


def simulate(candidate: Candidate, scenario: Scenario, opts: Options, *, utilisation: float,
             headroom: int, traffic_factor: float = 1.0, policy: str | None = None,
             cached_prefix_tokens: int | None = None, fidelity: str = "fleet",
             failures_at_s: tuple[float, ...] = (), start_s: float = 0.0,
             duration_s: float = SECONDS_PER_DAY) -> dict:
    """One simulated day (or ``[start_s, start_s + duration_s)`` of it) of ``candidate`` (module
    docstring). The policy sizes with the candidate's prefix cache; the replicas run with
    ``cached_prefix_tokens`` (default the same; 0 simulates a cache that is cold although the plan
    counted on it). Returns :func:`vidya_lab.autoscaling.simulate_day`'s dict."""
    v.check_instance("candidate", candidate, Candidate, "plan.Candidate")
    v.check_instance("opts", opts, Options, "plan.Options")
    forecast = day_curve(scenario, opts.day)
    actual = day_curve(scenario, opts.day, traffic_factor)
    rep = candidate.replica()
    planned = candidate_model(candidate, scenario)
    model = planned if cached_prefix_tokens in (None, candidate.cached_tokens) \
        else candidate_model(candidate, scenario, cached_prefix_tokens)
    cold = autoscaling.ColdStart() if opts.cold_start_s is None else float(opts.cold_start_s)
    lead = cold.total_s(rep) if isinstance(cold, autoscaling.ColdStart) else cold
    pol = autoscaling.make_policy(policy or opts.policy, planned, day=forecast, lead_s=lead,
                                  seed=opts.seed, utilisation=utilisation)
    work = None if fidelity == "fluid" else autoscaling.day_workload(
        actual, seed=opts.seed, scenario=scenario, start_s=start_s, duration_s=duration_s)
    return autoscaling.simulate_day(rep, day=actual, policy=pol, cold_start=cold, seed=opts.seed,
                                    dt_s=opts.dt_s, headroom=headroom,
                                    max_replicas=PLAN_MAX_REPLICAS, target=target(scenario),
                                    model=model, workload=work, utilisation=utilisation,
                                    fidelity=fidelity, failures_at_s=tuple(failures_at_s),
                                    start_s=start_s, duration_s=duration_s)


def candidate_model(candidate: Candidate, scenario: Scenario, cached: int | None = None):
    """Chapter 6's coarse model of ``candidate`` as it runs: its token budget, ``cached`` prompt
    tokens in its prefix cache (default the candidate's) and the prefixes it holds once."""
    k = candidate.cached_tokens if cached is None else cached
    resident = candidate.resident_prefix_tokens if k == candidate.cached_tokens else None
    return _model(candidate.replica(), scenario, k,
                  max(resident, k) if resident is not None and k else None)


@functools.lru_cache(maxsize=64)  # the search simulates one candidate many times
def _model(rep, scenario: Scenario, cached: int, resident: int | None = None):
    return autoscaling.replica_model(rep, prompt_tokens_mean=scenario.prompt_tokens_mean,
                                     output_tokens_mean=scenario.answer_tokens_mean,
                                     tpot_target_s=scenario.tpot_target_s,
                                     ttft_target_s=scenario.ttft_target_s,
                                     cached_prefix_tokens=cached,
                                     resident_prefix_tokens=resident)


def meets(summary: dict, scenario: Scenario) -> bool:
    """Does a simulated day reach the scenario's attainment target?"""
    return summary["attainment"] is not None and summary["attainment"] >= scenario.attainment_target
