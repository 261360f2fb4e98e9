"""Routing for the prefix cache: each router's rule by hand, each replica's cache, the capacity."""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pytest

from vidya_lab import caching, sizing
from vidya_lab.autoscaling import routing as rt
from vidya_lab.scenario import TANVI

B = 16  # the replica's block size (tokens)


@cache
def rep() -> sizing.Replica:
    return sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)


@cache
def trace() -> caching.PromptTrace:
    return caching.tutor_trace(600, seed=11, turns_mean=4, rate_per_s=20.0)


def test_round_robin_and_affinity_by_hand():
    t = trace()
    assert (rt.route(t, 5, "round_robin", tpot_s=0.02) == np.arange(len(t)) % 5).all()
    where = rt.route(t, 5, "session_affinity", tpot_s=0.02)
    for c in np.unique(t.conversation):  # every turn of a conversation on one replica
        assert np.unique(where[t.conversation == c]).size == 1
    assert (where == rt.route(t, 5, "session_affinity", tpot_s=0.02)).all()  # deterministic
    counts = np.bincount(rt._affinity(np.arange(10_000), 5), minlength=5)
    assert counts.min() > 1800  # the hash spreads conversations evenly


def test_prefix_aware_follows_the_history_while_balanced():
    t = trace()
    where = rt.route(t, 4, "prefix_aware", tpot_s=0.02)
    # with the load balanced, a follow-up goes where its previous turn went (the longest match)
    prev = {}
    same = []
    for i, c in enumerate(t.conversation.tolist()):
        if t.kind[i] == "follow-up" and c in prev:
            same.append(where[i] == prev[c])
        prev[c] = where[i]
    assert np.mean(same) > 0.95
    # a zero load threshold makes every imbalance count: the least-loaded rule spreads requests
    strict = rt.PrefixAware(balance_abs_threshold=0, balance_rel_threshold=1.0)
    spread = np.bincount(rt.route(t, 4, "prefix_aware", tpot_s=0.02, rule=strict), minlength=4)
    assert spread.sum() == len(t) and spread.max() - spread.min() <= 8


def test_a_warm_replica_hits_the_syllabus_and_subject_blocks_and_round_robin_loses_history():
    t = trace()
    res = rt.replay_routed(t, rep(), 6, "round_robin", tpot_s=0.02)
    shared = (TANVI.syllabus_prompt_tokens + TANVI.subject_prompt_tokens) // B * B
    new = t.kind == "new"
    assert (res.hit_tokens[new] == shared).all()  # warmed before readiness: first turns hit
    fu = np.flatnonzero(t.kind == "follow-up")
    prev = {}
    moved = []
    for i, c in enumerate(t.conversation.tolist()):
        if i in set(fu.tolist()) and c in prev and res.replica[i] != prev[c]:
            moved.append(i)
        prev[c] = res.replica[i]
    assert moved and (res.hit_tokens[moved] == shared).all()  # history on another replica
    aff = rt.replay_routed(t, rep(), 6, "session_affinity", tpot_s=0.02)
    assert aff.follow_up_hit_rate > res.follow_up_hit_rate + 0.1
    assert aff.token_hit_rate > res.token_hit_rate
    assert res.busiest_share == pytest.approx(1.0, abs=0.02)  # round robin is even
    assert res.shared_cached_tokens_mean == pytest.approx(shared)
    assert res.requests.sum() == len(t)


def test_one_replica_is_the_replay_of_chapter_4_with_the_warm_up():
    t = trace()
    one = [rt.replay_routed(t, rep(), 1, p, tpot_s=0.02) for p in rt.ROUTING_POLICIES]
    assert all((x.hit_tokens == one[0].hit_tokens).all() for x in one)
    cold = rt.replay_routed(t, rep(), 1, "round_robin", tpot_s=0.02, warm=False)
    plain = caching.simulate(t, rep(), tpot_s=0.02)
    assert (cold.hit_tokens == plain.hit_tokens).all()
    assert one[0].token_hit_rate >= cold.token_hit_rate


def test_capacity_counts_shared_blocks_once_and_history_only_as_prefill():
    r, t = rep(), trace()
    res = rt.replay_routed(t, r, 4, "session_affinity", tpot_s=0.02)
    isl, osl = res.prompt_tokens_mean, res.answer_tokens_mean
    kw = dict(prompt_tokens=isl, answer_tokens=osl, tpot_target_s=TANVI.tpot_target_s)
    none = rt.routed_capacity(r, None, **kw)
    assert none == sizing.capacity_rps(r, round(isl), round(osl), TANVI.tpot_target_s)
    only_shared = dataclasses.replace(res, cached_tokens_mean=res.shared_cached_tokens_mean)
    assert rt.routed_capacity(r, only_shared, **kw) == pytest.approx(sizing.capacity_rps(
        r, round(isl), round(osl), TANVI.tpot_target_s,
        cached_tokens=round(res.shared_cached_tokens_mean)))
    with_history = rt.routed_capacity(r, res, **kw)
    as_if_shared = sizing.capacity_rps(r, round(isl), round(osl), TANVI.tpot_target_s,
                                       cached_tokens=round(res.cached_tokens_mean))
    assert none < rt.routed_capacity(r, only_shared, **kw) < with_history <= as_if_shared


def test_bad_input_is_refused_by_name():
    t = trace()
    with pytest.raises(ValueError, match="replicas"):
        rt.route(t, 0, tpot_s=0.02)
    with pytest.raises(ValueError, match="policy"):
        rt.route(t, 2, "random", tpot_s=0.02)
    with pytest.raises(TypeError, match="trace"):
        rt.route([1, 2], 2, tpot_s=0.02)
    with pytest.raises(ValueError, match="cache_threshold"):
        rt.PrefixAware(cache_threshold=1.5)
    with pytest.raises(TypeError, match="routed"):
        rt.routed_capacity(rep(), 3.0, prompt_tokens=100, answer_tokens=10, tpot_target_s=0.1)
    with pytest.raises(ValueError, match="replicas"):
        rt.replay_routed(t, rep(), rt.MAX_ROUTED_REPLICAS + 1)
