"""The cache's timing side channel and per-tenant salts, against hand-derived values."""

from __future__ import annotations

import numpy as np
import pytest

from vidya_lab import caching, sizing

R = caching.default_replica()


def test_salted_keys_share_nothing_across_tenants_and_everything_within():
    a = caching.block_hashes(list(range(64)), 16)
    b = caching.block_hashes(list(range(48)) + [7] * 16, 16)
    assert a[:3] == b[:3] and a[3] != b[3]
    sa0, sb0, sa1 = caching.salt_keys(a, 0), caching.salt_keys(b, 0), caching.salt_keys(a, 1)
    assert sa0[:3] == sb0[:3] and sa0[3] != sb0[3]  # one tenant shares exactly as before
    assert not set(sa0) & set(sa1)  # two tenants share no block
    assert caching.salt_keys(a, 0) == sa0


def test_probe_signal_is_the_guess_prefilled():
    x = caching.probe_signal(R, 3392, 2000, 150)
    miss = sizing.iteration_time_s(R, prefill=[(2150, 3392)])
    hit = sizing.iteration_time_s(R, prefill=[(150, 5392)])
    assert x["signal_s"] == pytest.approx(miss - hit)
    assert x["ttft_hit_s"] == pytest.approx(R.calibration.request_overhead_s + hit)
    signals = [caching.probe_signal(R, 3392, g)["signal_s"] for g in (16, 400, 2000, 10000)]
    assert np.all(np.diff(signals) > 0)
    assert signals[0] < 0.01 * signals[-1]  # one block hardly shows; a document does


def test_tenant_prefix_blocks_by_hand():
    # syllabus 3,000 tokens = 187 whole blocks; each subject's 400 tokens end at 3,400 = 212 blocks
    assert caching.tenant_prefix_blocks() == 187 + 6 * (212 - 187) == 337
    assert caching.tenant_prefix_blocks(16, 3000, 1, 400) == 212
    assert caching.tenant_prefix_bytes(R, 10) == 10 * 337 * 16 * 81_920


@pytest.fixture(scope="module")
def trace():
    return caching.tutor_trace(600, seed=4, turns_mean=4)


def test_one_tenant_is_no_isolation(trace):
    one = caching.simulate_isolated(trace, caching.assign_tenants(trace, 1), R)
    plain = caching.simulate(trace, R)
    assert one["token_hit_rate"] == pytest.approx(plain.summary["token_hit_rate"], rel=1e-12)
    assert one["tenants"] == 1


def test_more_tenants_share_less(trace):
    rates = [caching.simulate_isolated(trace, caching.assign_tenants(trace, t, seed=1), R)
             ["token_hit_rate"] for t in (1, 10, 100, None)]
    assert rates == sorted(rates, reverse=True) and rates[0] > rates[-1]
    per_student = caching.assign_tenants(trace, None)
    assert np.array_equal(per_student, trace.conversation)


def test_a_conversation_keeps_one_tenant(trace):
    t = caching.assign_tenants(trace, 7, seed=3)
    for c in np.unique(trace.conversation)[:50]:
        assert np.unique(t[trace.conversation == c]).size == 1
    assert t.min() >= 0 and t.max() < 7
    assert np.array_equal(t, caching.assign_tenants(trace, 7, seed=3))


def test_bad_input_is_named(trace):
    with pytest.raises(ValueError, match="tenant"):
        caching.simulate_isolated(trace, np.zeros(3, dtype=int), R)
    with pytest.raises(ValueError, match="tenant"):
        caching.simulate_isolated(trace, np.zeros(len(trace)), R)
    with pytest.raises(ValueError, match="tenants"):
        caching.assign_tenants(trace, 0)
    with pytest.raises(ValueError, match="guessed_tokens"):
        caching.probe_signal(R, 100, 0)
    with pytest.raises(TypeError, match="salt"):
        caching.salt_keys([1, 2], "school")
