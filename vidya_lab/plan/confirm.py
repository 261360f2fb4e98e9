"""Step 2 of the plan: confirm a candidate by simulating the day it must survive.

The autoscaling policy plans for the forecast; the day it meets is busier by the chosen margin
(default +20 %: forecasts of exam traffic are that far off). A candidate is accepted when, on that
busier day, the share of requests meeting both latency targets reaches the target. The tries, for
each candidate (cheapest first): the policy aims its replicas at the busiest utilisation of
:data:`UTILISATIONS` first (fewest replicas), then lower ones (spare capacity inside every replica),
then one and two spare replicas (N+1, N+2); a candidate that misses widely goes straight to the next.

Utilisation is the book's one definition: offered requests/s ÷ (replicas × one replica's capacity),
capacity being the rate a replica sustains within the targets
(:func:`vidya_lab.autoscaling.utilisation`).
"""

from __future__ import annotations

from dataclasses import dataclass

from vidya_lab import _validate as v
from vidya_lab import autoscaling
from vidya_lab.autoscaling.cold_start import MAX_PREFIX_TOKENS
from vidya_lab.autoscaling.day import DAYS
from vidya_lab.plan.candidates import Candidate, day_curve, target
from vidya_lab.scenario import Scenario

#: Target utilisations the autoscaling policy is tried at, busiest (cheapest) first.
UTILISATIONS = (0.9, 0.8, 0.7, 0.6)
#: Spare replicas (N+k) the confirmation may add before it moves to the next candidate.
MAX_SPARE_REPLICAS = 2
#: Candidate layouts confirmed by simulation before giving up (the cheapest first).
MAX_CONFIRMED_CANDIDATES = 4
#: An attainment this far below the target is not tried with spare replicas (next layout instead).
FAR_MISS = 0.05
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
    """How the plan is confirmed (see :func:`vidya_lab.plan.plan` for each)."""

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
             cached_prefix_tokens: int | None = None, fidelity: str = "fleet") -> dict:
    """One simulated day of ``candidate``: the policy plans for the forecast, the day brings
    ``traffic_factor`` × the forecast. The policy sizes with the plan's prefix cache
    (``opts.cached_prefix_tokens``); the replicas run with ``cached_prefix_tokens`` (default the
    same; 0 simulates a cache that is cold although the plan counted on it). ``fidelity``
    ``"fluid"`` runs chapter 6's fluid fleet instead of every request (for what needs only
    attainment, replicas and cost; its distance from the request-level day is tested).
    Returns :func:`vidya_lab.autoscaling.simulate_day`'s dict."""
    v.check_instance("candidate", candidate, Candidate, "plan.Candidate")
    v.check_instance("opts", opts, Options, "plan.Options")
    forecast = day_curve(scenario, opts.day)
    actual = day_curve(scenario, opts.day, traffic_factor)
    rep = candidate.replica()
    planned = _model(rep, scenario, opts.cached_prefix_tokens)
    model = planned if cached_prefix_tokens in (None, opts.cached_prefix_tokens) \
        else _model(rep, scenario, cached_prefix_tokens)
    cold = autoscaling.ColdStart() if opts.cold_start_s is None else float(opts.cold_start_s)
    lead = cold.total_s(rep) if isinstance(cold, autoscaling.ColdStart) else cold
    pol = autoscaling.make_policy(policy or opts.policy, planned, day=forecast, lead_s=lead,
                                  seed=opts.seed, utilisation=utilisation)
    work = None if fidelity == "fluid" else autoscaling.day_workload(actual, seed=opts.seed,
                                                                     scenario=scenario)
    return autoscaling.simulate_day(rep, day=actual, policy=pol, cold_start=cold, seed=opts.seed,
                                    dt_s=opts.dt_s, headroom=headroom,
                                    max_replicas=PLAN_MAX_REPLICAS, target=target(scenario),
                                    model=model, workload=work, utilisation=utilisation,
                                    fidelity=fidelity)


def _model(rep, scenario: Scenario, cached: int):
    return autoscaling.replica_model(rep, prompt_tokens_mean=scenario.prompt_tokens_mean,
                                     output_tokens_mean=scenario.answer_tokens_mean,
                                     tpot_target_s=scenario.tpot_target_s,
                                     ttft_target_s=scenario.ttft_target_s,
                                     cached_prefix_tokens=cached)


def meets(summary: dict, scenario: Scenario) -> bool:
    """Does a simulated day reach the scenario's attainment target?"""
    return summary["attainment"] is not None and summary["attainment"] >= scenario.attainment_target


def tries() -> list[tuple[float, int]]:
    """(utilisation, spare replicas) in the order they are tried."""
    return [(u, 0) for u in UTILISATIONS] + [(UTILISATIONS[-1], k)
                                              for k in range(1, MAX_SPARE_REPLICAS + 1)]


def confirm(ranked: list[Candidate], scenario: Scenario, opts: Options):
    """The first (candidate, utilisation, spare) that survives the day at the margin.

    Returns ``(chosen, margin_run, confirmed)``: ``chosen`` is ``(candidate, utilisation, spare)``
    or None, ``margin_run`` the accepted simulation at ``1 + traffic_margin`` × the forecast, and
    ``confirmed`` one record per simulation tried.
    """
    factor = 1.0 + v.check_instance("opts", opts, Options, "plan.Options").traffic_margin
    confirmed = []
    for cand in ranked[:MAX_CONFIRMED_CANDIDATES]:
        for utilisation, spare in tries():
            out = simulate(cand, scenario, opts, utilisation=utilisation, headroom=spare,
                           traffic_factor=factor)
            s = out["summary"]
            ok = meets(s, scenario)
            confirmed.append({"gpu": cand.gpu, "precision": cand.precision, "tp": cand.layout.tp,
                              "pp": cand.layout.pp, "replicas": cand.layout.replicas,
                              "utilisation": utilisation, "headroom": spare,
                              "traffic_factor": factor, "attainment": s["attainment"],
                              "max_replicas": s["max_replicas"], "cost": s["cost"],
                              "meets_target": ok})
            if ok:
                return (cand, utilisation, spare), out, confirmed
            if (spare == 0 and utilisation == UTILISATIONS[-1]
                    and (s["attainment"] is None
                         or s["attainment"] < scenario.attainment_target - FAR_MISS)):
                break  # spare replicas will not close a gap this wide: try the next layout
    return None, None, confirmed
