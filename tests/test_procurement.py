"""Buying the GPU-hours: the reserve-the-k-th-replica rule by hand, and the month's bill."""

from __future__ import annotations

import pytest

from vidya_lab import procurement as pr

#: A day by hand: 2 replicas all day, a third for 20 hours, a fourth for 12, a fifth for 2.
DAY = [2.0] * 4 + [3.0] * 8 + [4.0] * 10 + [5.0] * 2


def test_hours_in_service_by_hand():
    assert pr.hours_in_service(DAY) == [24.0, 24.0, 20.0, 12.0, 2.0]
    assert pr.hours_in_service([0.5] * 24) == [12.0]  # half a replica: twelve replica-hours


@pytest.mark.parametrize("ratio, reserved", [(0.85, 2), (0.8, 3), (0.5, 4), (0.05, 5), (1.0, 2)])
def test_reserve_the_kth_replica_when_it_runs_24_ratio_hours(ratio, reserved):
    # 24 x 0.85 = 20.4 h: the third replica's 20 h fall short; at 0.8 (19.2 h) they do not
    assert pr.reserved_replicas(DAY, ratio) == reserved


def test_buy_follows_the_rule_and_the_bill_adds_up():
    plan = pr.buy(DAY, gpus_per_replica=4, gpu="h100-sxm")
    rho = pr.price_ratio("h100-sxm", "reserved")[0]
    assert rho == pytest.approx(0.85)  # Hyperstack's rate card (procurement.csv)
    assert plan.reserved_replicas == pr.reserved_replicas(DAY, rho) == 2
    cost = pr.monthly_cost_with(DAY, 2, gpus_per_replica=4, gpu="h100-sxm")
    assert cost == pytest.approx(plan.monthly_cost)
    od = 3.0  # the catalog's on-demand price per GPU-hour (an assumption of the story)
    assert cost["reserved"] == pytest.approx(30 * 24 * 2 * 4 * od * 0.85)
    assert cost["on_demand"] == pytest.approx(30 * (8 * 1 + 10 * 2 + 2 * 3) * 4 * od)
    # the rule's count is the cheapest: one more or one fewer reserved replica costs more
    for k in (1, 3):
        assert pr.monthly_cost_with(DAY, k, gpus_per_replica=4, gpu="h100-sxm")["total"] > \
            cost["total"]
    half = pr.monthly_cost_with(DAY, 2, gpus_per_replica=4, gpu="h100-sxm", spot_share=0.5)
    assert half["spot"] == pytest.approx(0.5 * cost["on_demand"] * pr.price_ratio(
        "h100-sxm", "spot")[0])


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="24 hourly"):
        pr.hours_in_service([1.0] * 23)
    with pytest.raises(ValueError, match="ratio"):
        pr.reserved_replicas(DAY, 0.0)
    with pytest.raises(TypeError, match="reserved"):
        pr.monthly_cost_with(DAY, 1.5, gpus_per_replica=4, gpu="h100-sxm")
    with pytest.raises(ValueError, match="replicas_by_hour"):
        pr.hours_in_service([-1.0] * 24)
