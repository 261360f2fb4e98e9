"""What the prefix cache is worth under the isolation the book recommends (chapter 4).

A cache shared by every school lets a student time another school's uploads (chapter 4's side
channel); chapter 4 recommends a salt per school, with each school routed to few replicas. The plan
therefore counts the cache a *salted* replica really has, measured by chapter 4's own replay
(:func:`vidya_lab.caching.simulate_isolated`):

* ``"shared"``: every request finds the syllabus and its subject prompt (:func:`shared_prefix_tokens`);
  the prefixes are held once;
* ``"per-school"``: the district's schools are routed evenly to the peak fleet's replicas, so a
  replica serves ``ceil(schools / replicas)`` of them; a replay of the scenario's requests at the
  replica's peak rate, each salted by its school, gives the mean cached tokens per request (whole
  blocks), and each school's prefixes are held once (:func:`vidya_lab.caching.tenant_prefix_blocks`),
  up to :data:`RESIDENT_SHARE_MAX` of the KV cache (the engine evicts unused prefixes first);
* ``"per-student"``: every conversation its own salt, which forbids even the syllabus (the
  scenario's prompts are one turn each, so nothing is reused: 0 cached, as chapter 4's replay finds).

The count is one mean per replica, used by the fleet's coarse model: misses are spread over every
request instead of falling on a few (a stated simplification; the misses are a school's first
requests on a replica, a few per school per day).
"""

from __future__ import annotations

import functools
import math

from vidya_lab import _validate as v
from vidya_lab import caching, sizing
from vidya_lab.scenario import ISOLATION_POLICIES, TANVI, Scenario

#: Largest share of a replica's KV cache the resident prefixes are counted as taking: beyond it the
#: engine's LRU evicts the prefixes no running request holds (the replay's hit rate counts that).
RESIDENT_SHARE_MAX = 0.25
#: Requests the per-school replay draws (enough for the mean cached tokens to a block; under a
#: second of work).
REPLAY_REQUESTS = 1000


def shared_prefix_tokens(scenario: Scenario = TANVI) -> int:
    """The syllabus and one subject prompt, whole blocks of 16 tokens, below the mean prompt."""
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    tokens = scenario.syllabus_prompt_tokens + scenario.subject_prompt_tokens
    return min(tokens, scenario.prompt_tokens_mean - 1) // 16 * 16


def _prefix_tokens_per_tenant(r: sizing.Replica, scenario: Scenario) -> int:
    return r.block_tokens * caching.tenant_prefix_blocks(
        r.block_tokens, scenario.syllabus_prompt_tokens, scenario.subjects,
        scenario.subject_prompt_tokens)


@functools.lru_cache(maxsize=64)
def _replay(r: sizing.Replica, scenario: Scenario, schools: int, rate: float, seed: int) -> dict:
    trace = caching.tutor_trace(REPLAY_REQUESTS, seed=seed, rate_per_s=rate,
                                syllabus_tokens=scenario.syllabus_prompt_tokens,
                                subjects=scenario.subjects,
                                subject_tokens=scenario.subject_prompt_tokens,
                                question_tokens=scenario.question_tokens_mean,
                                answer_tokens=scenario.answer_tokens_mean)
    return caching.simulate_isolated(trace, caching.assign_tenants(trace, schools, seed=seed), r)


def prefix_cache(r: sizing.Replica, scenario: Scenario = TANVI, *, replicas: int = 1,
                 rate_per_s: float | None = None, isolation: str | None = None,
                 seed: int = 0, shared_tokens: int | None = None) -> dict:
    """The prefix cache a replica of a fleet of ``replicas`` counts on (module docstring).

    ``rate_per_s``: one replica's request rate (default the exam peak ÷ replicas); ``isolation``:
    one of :data:`~vidya_lab.scenario.ISOLATION_POLICIES` (default the scenario's). Returns
    ``isolation``, ``schools_per_replica``, ``token_hit_rate`` (of all prompt tokens),
    ``cached_tokens`` (per request, whole blocks: what the replica model counts),
    ``resident_prefix_tokens`` (the prefixes held once) and ``shared_cached_tokens`` (what a
    shared cache would give, for comparison; ``shared_tokens`` overrides it).
    """
    sizing._as_replica(r)
    v.check_instance("scenario", scenario, Scenario, "scenario.Scenario")
    policy = v.check_choice("isolation", scenario.isolation if isolation is None else isolation,
                            ISOLATION_POLICIES)
    n = v.check_int("replicas", replicas, minimum=1, maximum=100_000)
    rate = scenario.exam_peak_rps / n if rate_per_s is None else v.check_real(
        "rate_per_s", rate_per_s, minimum=0.0, min_inclusive=False, maximum=1e5)
    shared = shared_prefix_tokens(scenario) if shared_tokens is None else v.check_cached_tokens(
        shared_tokens, scenario.prompt_tokens_mean, "prompt_tokens_mean")
    per_tenant = _prefix_tokens_per_tenant(r, scenario)
    if policy == "shared":
        return {"isolation": policy, "schools_per_replica": scenario.schools,
                "token_hit_rate": shared / scenario.prompt_tokens_mean, "cached_tokens": shared,
                "resident_prefix_tokens": per_tenant, "shared_cached_tokens": shared}
    if policy == "per-student":  # one salt per conversation of one turn: no prefix is ever reused
        return {"isolation": policy, "schools_per_replica": None, "token_hit_rate": 0.0,
                "cached_tokens": 0, "resident_prefix_tokens": 0, "shared_cached_tokens": shared}
    tenants = math.ceil(scenario.schools / n)
    x = _replay(r, scenario, tenants, float(rate), v.check_int("seed", seed, minimum=0))
    cached = min(int(x["mean_cached_tokens"]) // r.block_tokens * r.block_tokens, shared)
    resident = min(per_tenant * tenants, int(RESIDENT_SHARE_MAX * r.kv_capacity_tokens))
    return {"isolation": policy, "schools_per_replica": tenants,
            "token_hit_rate": x["token_hit_rate"], "cached_tokens": cached,
            "resident_prefix_tokens": resident if cached else 0, "shared_cached_tokens": shared}
