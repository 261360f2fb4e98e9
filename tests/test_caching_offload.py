"""KV offload: restore over PCIe vs recompute, and the two-tier replay, against hand-derived values."""

from __future__ import annotations

import csv
from importlib import resources

import numpy as np
import pytest

from vidya_lab import caching, sizing

R = caching.default_replica()  # Llama-3.3-70B bf16, TP 4 on H100: 81,920 KV bytes per token per GPU


def test_copy_rates_are_the_measured_rows():
    text = resources.files("vidya_lab").joinpath("data", "device_measurements.csv").read_text()
    rows = [r for r in csv.DictReader(text.splitlines()) if r["metric"] == "host_to_device_copy"]
    assert {r["unit"] for r in rows} == {"GB/s"} and len(rows) >= 4
    assert caching.host_to_device_bytes_per_s("h100-sxm") == 51e9  # nvbandwidth, ND H100 v5
    assert caching.host_to_device_bytes_per_s("h200") == 52e9
    with pytest.raises(ValueError, match="no measured host-to-device.*h100-sxm"):
        caching.host_to_device_bytes_per_s("l40s")


def test_restore_time_by_hand():
    assert caching.restore_time_s(R, 4000) == pytest.approx(4000 * 81_920 / 51e9)
    assert caching.restore_time_s(R, 4000, link_bytes_per_s=25e9) == pytest.approx(4000 * 81_920 / 25e9)
    assert caching.restore_time_s(R, 0) == 0.0


def test_restore_or_recompute_is_the_cost_model():
    x = caching.restore_or_recompute(R, 8150, 3392, 4600)
    overhead = R.calibration.request_overhead_s
    copy = 4600 * 81_920 / 51e9
    rest = sizing.iteration_time_s(R, prefill=[(158, 7992)])
    again = sizing.iteration_time_s(R, prefill=[(4758, 3392)])
    assert x["restore_s"] == pytest.approx(copy)
    assert x["ttft_restore_s"] == pytest.approx(overhead + copy + rest)
    assert x["ttft_recompute_s"] == pytest.approx(overhead + again)
    assert x["speedup"] > 5  # PCIe carries a token's KV far faster than the GPUs recompute it


def test_break_even_link_makes_the_two_equal():
    bw = caching.break_even_link_bytes_per_s(R, 8150, 3392, 4600)
    x = caching.restore_or_recompute(R, 8150, 3392, 4600, link_bytes_per_s=bw)
    assert x["ttft_restore_s"] == pytest.approx(x["ttft_recompute_s"], rel=1e-9)
    assert bw < caching.host_to_device_bytes_per_s("h100-sxm")
    assert caching.break_even_link_bytes_per_s(R, 8150, 3392, 0) == float("inf")


@pytest.fixture(scope="module")
def conversations():
    return caching.tutor_trace(400, seed=4, turns_mean=4)


def test_no_cpu_tier_is_the_gpu_cache(conversations):
    s = caching.simulate_offload(conversations, R, gpu_cache_bytes=10e9, cpu_cache_bytes=0.0)
    alone = caching.simulate(conversations, R, cache_bytes=10e9)
    sel = conversations.kind == "follow-up"
    want = alone.hit_tokens[sel].sum() / alone.prompt_tokens[sel].sum()
    assert s["hit_rate_gpu"] == s["hit_rate_tiered"] == pytest.approx(want, rel=1e-12)
    assert s["restored_tokens"] == 0 and s["ttft_s_mean_gpu_only"] == s["ttft_s_mean_tiered"]


def test_an_unlimited_tier_reaches_the_unlimited_cache(conversations):
    s = caching.simulate_offload(conversations, R, gpu_cache_bytes=2e9, cpu_cache_bytes=1e14)
    unlimited = caching.simulate(conversations, R, cache_bytes=1e18)
    assert s["token_hit_rate_tiered"] == pytest.approx(unlimited.summary["token_hit_rate"], rel=1e-12)
    assert s["hit_rate_tiered"] > s["hit_rate_gpu"]
    assert s["ttft_s_mean_tiered"] < s["ttft_s_mean_gpu_only"]
    assert s["prefill_tokens_tiered"] + s["restored_tokens"] == s["prefill_tokens_gpu_only"]


def test_more_cpu_tier_never_hits_less(conversations):
    rates = [caching.simulate_offload(conversations, R, gpu_cache_bytes=3e9, cpu_cache_bytes=c)
             ["hit_rate_tiered"] for c in (0.0, 5e9, 20e9, 80e9)]
    assert np.all(np.diff(rates) >= -1e-12)
    rows = caching.offload_sweep(conversations, [2e9, 8e9], 20e9, R)
    assert [x["gpu_cache_bytes"] for x in rows] == [2e9, 8e9]


@pytest.mark.parametrize("kw, err", [
    ({"gpu_cache_bytes": -1.0, "cpu_cache_bytes": 0.0}, "gpu_cache_bytes"),
    ({"gpu_cache_bytes": 1e9, "cpu_cache_bytes": float("nan")}, "cpu_cache_bytes"),
    ({"gpu_cache_bytes": 1e9, "cpu_cache_bytes": 0.0, "link_bytes_per_s": 10.0}, "link_bytes_per_s"),
    ({"gpu_cache_bytes": 1e9, "cpu_cache_bytes": 0.0, "kinds": ("lunch",)}, "kinds"),
])
def test_bad_input_is_named(conversations, kw, err):
    with pytest.raises(ValueError, match=err):
        caching.simulate_offload(conversations, R, **kw)


def test_bad_request_shapes_are_named():
    with pytest.raises(ValueError, match="offloaded_tokens"):
        caching.restore_or_recompute(R, 100, 50, 60)
    with pytest.raises(TypeError, match="tokens"):
        caching.restore_time_s(R, 1.5)
    with pytest.raises(TypeError, match="trace"):
        caching.simulate_offload([1, 2], R, gpu_cache_bytes=1e9, cpu_cache_bytes=0.0)
