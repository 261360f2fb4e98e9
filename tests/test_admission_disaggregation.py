"""Disaggregated prefill/decode against colocated replicas: hand-derived values and invariants."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import admission as ad
from vidya_lab import catalog, queueing, sizing
from vidya_lab.admission import disaggregation as dg
from vidya_lab.caching.savings import prefill_time_with_cache_s
from vidya_lab.scenario import TANVI

R = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
ISL, OSL = TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean
CACHED = 3392  # syllabus + subject prompt, whole 16-token blocks (plan.prefix_tokens)


def test_kv_transfer_by_hand():
    # llama-3.3-70b bf16: 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 bytes per
    # token; TP 4 holds 2 KV heads per GPU: 81,920 bytes per token per GPU
    assert R.kv_bytes_per_token_per_gpu == 81_920
    ib, eth, nvl = (catalog.get_link(x) for x in ("infiniband-ndr", "ethernet-100g", "nvlink4"))
    assert ad.kv_transfer_s(R, 3550, "infiniband-ndr") == pytest.approx(
        ib.p2p_latency_s + 3550 * 81_920 / 50e9)                   # each GPU over its own NIC
    assert ad.kv_transfer_s(R, 3550, "nvlink4") == pytest.approx(nvl.p2p_latency_s + 3550 * 81_920 / 450e9)
    assert ad.kv_transfer_s(R, 3550, "ethernet-100g") == pytest.approx(
        eth.p2p_latency_s + 4 * 3550 * 81_920 / 12.5e9)            # four shards through one NIC
    assert ad.kv_transfer_s(R, 0, "nvlink4") == 0.0
    assert ad.kv_transfer_s(R, 3550, "infiniband-ndr") == pytest.approx(5.826e-3, rel=1e-3)


def test_sequences_that_fit_by_hand_and_as_sizing_counts_them():
    per_seq = math.ceil((ISL + OSL) / 16)                           # 244 blocks of 16 tokens
    assert ad.sequences_that_fit(R, ISL, OSL) == R.kv_blocks // per_seq
    shared = CACHED // 16                                           # 212 shared blocks
    assert ad.sequences_that_fit(R, ISL, OSL, CACHED) == (R.kv_blocks - shared) // (per_seq - shared)
    # the same rule as the saturated batch of chapter 2 where memory limits it
    sat = sizing.saturated_throughput(R, ISL, OSL)
    assert sat["limited_by"] == "memory" and sat["batch"] == ad.sequences_that_fit(R, ISL, OSL)


def test_decode_pool_is_the_largest_batch_meeting_the_target():
    target = TANVI.tpot_target_s
    d = ad.decode_pool(R, ISL, OSL, target, CACHED)
    ctx = ISL + OSL / 2
    step = sizing.iteration_time_s(R, decode_contexts=[int(ctx)] * d["batch"])
    assert d["step_s"] == pytest.approx(step, rel=1e-3)
    assert d["tpot_s"] <= target
    assert d["limited_by"] == "TPOT target"
    assert dg.decode_step_s(R, d["batch"] + 1, ctx) > target       # one more sequence misses it
    assert d["capacity_rps"] == pytest.approx(d["batch"] / (OSL * d["step_s"]))   # Little's law
    # without a cache the KV pool is the limit, and the step is far below the target
    m = ad.decode_pool(R, ISL, OSL, target)
    assert m["limited_by"] == "memory" and m["batch"] == ad.sequences_that_fit(R, ISL, OSL)
    assert m["step_s"] < target / 2
    # the transfer delays one token of osl − 1 gaps
    x = ad.decode_pool(R, ISL, OSL, target, CACHED, transfer_s=0.349)
    assert x["tpot_s"] == pytest.approx(x["step_s"] + 0.349 / (OSL - 1))
    assert x["batch"] < d["batch"]


def test_prefill_pool_meets_the_ttft_percentile_with_the_fewest_replicas():
    lam, ttft = TANVI.exam_peak_rps, TANVI.ttft_target_s
    p = ad.prefill_pool(R, lam, ISL, ttft)
    s = prefill_time_with_cache_s(R, ISL, 0)
    assert p["service_s"] == s
    budget = ttft - R.calibration.request_overhead_s - s
    mu, c = 1 / s, p["replicas"]

    def tail(n):  # P(wait > budget) of M/M/n, by Erlang C
        return queueing.erlang_c(n, lam / mu) * math.exp(-(n * mu - lam) * budget)

    assert tail(c) <= 0.01
    assert c - 1 <= lam / mu or tail(c - 1) > 0.01
    assert p["ttft_s"] <= ttft
    assert p["utilisation"] == pytest.approx(lam * s / c)


def test_prefill_pool_of_one_is_m_m_1():
    # λ = 1/s, S = prefill of one cached prompt; with one server P(W > t) = ρ·exp(−(μ − λ)t)
    s = prefill_time_with_cache_s(R, ISL, CACHED)
    p = ad.prefill_pool(R, 1.0, ISL, 2.0, CACHED)
    assert p["replicas"] == 1
    rho = 1.0 * s
    t99 = math.log(rho / 0.01) / (1 / s - 1.0) if rho > 0.01 else 0.0
    assert p["ttft_s"] == pytest.approx(R.calibration.request_overhead_s + s + t99)


def test_colocated_pool_is_the_books_capacity():
    lam = TANVI.exam_peak_rps
    c = ad.colocated_pool(R, lam, ISL, OSL, TANVI.tpot_target_s)
    cap = sizing.capacity_rps(R, ISL, OSL, TANVI.tpot_target_s)
    assert c["capacity_rps"] == pytest.approx(cap)
    assert c["replicas"] == math.ceil(lam / cap) and c["gpus"] == 4 * c["replicas"]
    assert c["budget"] == 8192 and c["longest_gap_s"] > TANVI.tpot_target_s   # the default stalls
    assert c["cost_per_hour_usd"] == pytest.approx(c["gpus"] * R.gpu.price_per_hour_usd)


def test_stall_free_budget_keeps_every_iteration_within_the_target():
    b = ad.stall_free_budget(R, ISL, OSL, TANVI.tpot_target_s)
    tuned = dg._with_budget(R, b)
    assert tuned.max_batched_tokens == b
    assert ad.colocated_pool(tuned, 1.0, ISL, OSL, TANVI.tpot_target_s)["longest_gap_s"] \
        <= TANVI.tpot_target_s
    nxt = [c for c in dg.BUDGET_CHOICES if c > b][0]
    assert ad.colocated_pool(dg._with_budget(R, nxt), 1.0, ISL, OSL,
                             TANVI.tpot_target_s)["longest_gap_s"] > TANVI.tpot_target_s
    with pytest.raises(ValueError, match="no token budget"):
        ad.stall_free_budget(R, ISL, OSL, 0.005)


def test_when_it_pays_on_tanvis_workload():
    args = (R, TANVI.exam_peak_rps, ISL, OSL, TANVI.ttft_target_s, TANVI.tpot_target_s)
    cold, warm = ad.when_it_pays(*args), ad.when_it_pays(*args, CACHED)
    for w in (cold, warm):
        d = w["disaggregated"]
        assert d["gpus"] == 4 * (d["prefill_replicas"] + d["decode_replicas"])
        assert d["longest_gap_s"] == pytest.approx(d["transfer_s"] + d["decode"]["step_s"])
        assert w["colocated_stall_free"]["longest_gap_s"] <= TANVI.tpot_target_s
        assert w["pays"] == (w["saving_per_hour_usd"] > 0)
    assert cold["disaggregated"]["transfer_tokens"] == ISL
    assert warm["disaggregated"]["transfer_tokens"] == ISL - CACHED
    # the cache shrinks the prefill pool far more than anything else
    assert warm["disaggregated"]["prefill_replicas"] < cold["disaggregated"]["prefill_replicas"] / 4
    assert not warm["pays"]          # with the syllabus cached, colocated is cheaper
    whole = ad.disaggregated(R, R, TANVI.exam_peak_rps, ISL, OSL, TANVI.ttft_target_s,
                             TANVI.tpot_target_s, CACHED, prefix_on_decode=False)
    assert whole["transfer_tokens"] == ISL and whole["transfer_bytes"] == 327_680 * ISL


def test_a_tight_tpot_target_is_where_disaggregation_pays_without_a_cache():
    w = ad.when_it_pays(R, TANVI.exam_peak_rps, ISL, OSL, TANVI.ttft_target_s, 0.04)
    assert w["pays"] and w["disaggregated"]["gpus"] < w["colocated_stall_free"]["gpus"]


def test_every_pool_is_planned_at_the_same_utilisation():
    """At utilisation u the colocated replicas and the decode pool carry u of their capacity:
    ceil(rate / (u * capacity)) replicas; the prefill pool (sized by its TTFT tail) is unchanged."""
    args = (R, TANVI.exam_peak_rps, ISL, OSL, TANVI.ttft_target_s, TANVI.tpot_target_s, CACHED)
    full, planned = ad.when_it_pays(*args), ad.when_it_pays(*args, utilisation=0.8)
    for key in ("colocated", "colocated_stall_free"):
        cap = planned[key]["capacity_rps"]
        assert cap == pytest.approx(full[key]["capacity_rps"])
        assert planned[key]["replicas"] == math.ceil(TANVI.exam_peak_rps / (0.8 * cap))
    d, f = planned["disaggregated"], full["disaggregated"]
    assert d["decode_replicas"] == math.ceil(TANVI.exam_peak_rps / (0.8 * d["decode"]["capacity_rps"]))
    assert d["prefill_replicas"] == f["prefill_replicas"]
    # chapter 5's lesson at the book's planning utilisation: with the syllabus cached,
    # colocated replicas at the stall-free budget need fewer GPUs than the split pools
    assert planned["colocated_stall_free"]["gpus"] < d["gpus"] and not planned["pays"]
    rows = ad.tpot_sweep(R, TANVI.exam_peak_rps, ISL, OSL, TANVI.ttft_target_s,
                         [TANVI.tpot_target_s], CACHED, utilisation=0.8)
    assert rows[0]["stall_free_gpus"] == planned["colocated_stall_free"]["gpus"]
    assert rows[0]["disaggregated_gpus"] == d["gpus"]
    with pytest.raises(ValueError, match="utilisation"):
        ad.colocated_pool(R, 1.0, ISL, OSL, 0.1, utilisation=0.0)
    with pytest.raises(ValueError, match="utilisation"):
        ad.disaggregated(R, R, 1.0, ISL, OSL, 2.0, 0.1, utilisation=1.5)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.5, 200.0), st.floats(1.01, 3.0))
def test_more_traffic_never_needs_fewer_replicas(rate, factor):
    a = ad.disaggregated(R, R, rate, ISL, OSL, 2.0, 0.1, CACHED)
    b = ad.disaggregated(R, R, rate * factor, ISL, OSL, 2.0, 0.1, CACHED)
    assert b["prefill_replicas"] >= a["prefill_replicas"]
    assert b["decode_replicas"] >= a["decode_replicas"]
    assert a["prefill"]["ttft_s"] <= 2.0 and a["decode"]["tpot_s"] <= 0.1


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="rate_per_s"):
        ad.prefill_pool(R, 0.0, ISL, 2.0)
    with pytest.raises(ValueError, match="cached_tokens"):
        ad.decode_pool(R, ISL, OSL, 0.1, ISL)
    with pytest.raises(ValueError, match="ttft_target_s"):
        ad.prefill_pool(R, 1.0, ISL, 0.01)                         # one prompt alone misses it
    with pytest.raises(ValueError, match="tpot_target_s"):
        ad.decode_pool(R, ISL, OSL, 0.001)
    with pytest.raises(KeyError):
        ad.kv_transfer_s(R, 10, "carrier-pigeon")
    with pytest.raises(TypeError, match="replica"):
        ad.kv_transfer_s("h100", 10, "nvlink4")
    with pytest.raises(TypeError, match="prefix_on_decode"):
        ad.disaggregated(R, R, 1.0, ISL, OSL, 2.0, 0.1, CACHED, prefix_on_decode=1)
