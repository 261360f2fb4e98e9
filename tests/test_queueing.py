"""Queueing formulas against hand-derived values and published Erlang B table entries."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import queueing as q


def test_mm1_by_hand():
    # λ = 1, μ = 2: ρ = 1/2, Wq = ρ/(μ−λ) = 0.5 s, W = 1/(μ−λ) = 1 s, L = ρ/(1−ρ) = 1
    assert q.mm1_mean_wait_s(1.0, 2.0) == pytest.approx(0.5)
    assert q.mm1_mean_response_s(1.0, 2.0) == pytest.approx(1.0)
    assert q.mm1_mean_in_system(1.0, 2.0) == pytest.approx(1.0)
    # Little's law: L = λ W
    assert q.mm1_mean_in_system(0.7, 1.0) == pytest.approx(0.7 * q.mm1_mean_response_s(0.7, 1.0))


def test_md1_is_half_of_mm1_by_hand():
    # λ = 1, S = 0.5: ρ = 0.5, Wq = ρS/(2(1−ρ)) = 0.25 s
    assert q.md1_mean_wait_s(1.0, 0.5) == pytest.approx(0.25)
    assert q.md1_mean_wait_s(0.8, 1.0) == pytest.approx(q.mm1_mean_wait_s(0.8, 1.0) / 2)
    # M/G/1 with cv = 1 is M/M/1
    assert q.mg1_mean_wait_s(0.8, 1.0, 1.0) == pytest.approx(q.mm1_mean_wait_s(0.8, 1.0))


def test_erlang_c_closed_forms():
    # C(2, 1) = (1/2 · 2/(2−1)) / (1 + 1 + 1) = 1/3;  C(3, 2) = 4/9 (worked by hand)
    assert q.erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert q.erlang_c(3, 2.0) == pytest.approx(4 / 9)
    # one server: the probability of waiting is ρ
    assert q.erlang_c(1, 0.37) == pytest.approx(0.37)


@pytest.mark.parametrize("servers, load_at_1pct", [(1, 0.0101), (2, 0.153), (5, 1.36),
                                                   (10, 4.46), (20, 12.0)])
def test_erlang_b_matches_published_table(servers, load_at_1pct):
    # Erlang B tables (grade of service 0.01): 1 line 0.0101 E, 2 lines 0.153 E, 5 lines 1.36 E,
    # 10 lines 4.46 E, 20 lines 12.0 E (the classic telephone-traffic table).
    assert q.erlang_b(servers, load_at_1pct) == pytest.approx(0.01, rel=0.03)


def test_mmc_reduces_to_mm1_and_by_hand():
    assert q.mmc_mean_wait_s(0.6, 1.0, 1) == pytest.approx(q.mm1_mean_wait_s(0.6, 1.0))
    # λ = 2, μ = 1.5, c = 2: a = 4/3, C = 0.6095…, Wq = C / (3 − 2)
    c = q.erlang_c(2, 4 / 3)
    assert c == pytest.approx((4 / 3) ** 2 / 2 * 3 / (1 + 4 / 3 + (4 / 3) ** 2 / 2 * 3))
    assert q.mmc_mean_wait_s(2.0, 1.5, 2) == pytest.approx(c / 1.0)
    assert q.mmc_wait_exceeds(2.0, 1.5, 2, 0.0) == pytest.approx(c)
    assert q.mmc_wait_exceeds(2.0, 1.5, 2, 1.0) == pytest.approx(c * math.exp(-1.0))
    assert q.mmc_mean_response_s(2.0, 1.5, 2) == pytest.approx(c + 1 / 1.5)


def test_servers_needed():
    # 10 erlangs: C(13,10) ≈ 0.285 > 0.2 ≥ C(14,10) ≈ 0.174
    s = q.servers_needed(10.0, 1.0, max_wait_probability=0.2)
    assert s.servers == 14
    assert s.wait_probability == pytest.approx(q.erlang_c(14, 10.0))
    assert q.erlang_c(13, 10.0) > 0.2
    assert q.servers_needed(10.0, 1.0, max_utilisation=0.5).servers == 20
    sl = q.servers_needed(10.0, 1.0, wait_s=0.2, max_wait_exceeds_probability=0.2)
    assert sl.wait_exceeds_probability <= 0.2
    prev = q.mmc_wait_exceeds(10.0, 1.0, sl.servers - 1, 0.2) if sl.servers > 11 else 1.0
    assert prev > 0.2
    mw = q.servers_needed(10.0, 1.0, max_mean_wait_s=0.01)
    assert mw.mean_wait_s <= 0.01 < q.mmc_mean_wait_s(10.0, 1.0, mw.servers - 1)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.1, 50.0), st.integers(1, 80))
def test_erlang_c_properties(load, servers):
    if load >= servers:
        with pytest.raises(ValueError, match="unstable"):
            q.erlang_c(servers, load)
        return
    c = q.erlang_c(servers, load)
    assert q.erlang_b(servers, load) <= c <= 1.0   # queueing waits more often than a loss system blocks
    if load < servers + 1:
        assert q.erlang_c(servers + 1, load) <= c     # one more server never hurts


def test_errors_name_the_parameter():
    with pytest.raises(ValueError, match="unstable"):
        q.mm1_mean_wait_s(2.0, 1.0)
    with pytest.raises(ValueError, match="service_rate_per_s"):
        q.mm1_mean_wait_s(1.0, 0.0)
    with pytest.raises(TypeError, match="servers"):
        q.erlang_c(2.5, 1.0)
    with pytest.raises(ValueError, match="at least one target"):
        q.servers_needed(1.0, 1.0)
    with pytest.raises(ValueError, match="go together"):
        q.servers_needed(1.0, 1.0, wait_s=1.0)
    with pytest.raises(ValueError, match="service_cv"):
        q.mg1_mean_wait_s(0.5, 1.0, -1.0)


def test_huge_and_boolean_inputs_are_refused_by_name():
    # an integer beyond float range is named, not an OverflowError from float()
    with pytest.raises(ValueError, match="arrival_rate_per_s must be a finite number"):
        q.mm1_mean_wait_s(10**400, 2.0)
    with pytest.raises(ValueError, match="service_rate_per_s must be a finite number"):
        q.mmc_mean_wait_s(1.0, 10**400, 2)
    with pytest.raises(TypeError, match="arrival_rate_per_s must be a number"):
        q.mm1_mean_wait_s(True, 2.0)
    with pytest.raises(TypeError, match="servers must be an integer"):
        q.erlang_b(True, 1.0)


def test_work_is_bounded_up_front():
    # the Erlang recursion takes one step per server: a trillion servers is refused, not run
    with pytest.raises(ValueError, match=r"the limit is 1e\+07"):
        q.erlang_b(10**12, 1.0)
    with pytest.raises(ValueError, match=r"servers just to be stable; the limit is 1e\+05"):
        q.servers_needed(2e5, 1.0, max_wait_probability=0.1)
    # the staffing search carries Erlang B along (one step per server tried), so a search over
    # tens of thousands of servers is quick, and agrees with the direct formula
    big = q.servers_needed(5e4, 1.0, max_wait_probability=0.05)
    assert big.wait_probability == pytest.approx(q.erlang_c(big.servers, 5e4))
    assert q.erlang_c(big.servers - 1, 5e4) > 0.05 >= big.wait_probability
