"""Buying the GPU-hours: the reserve-the-k-th-replica rule by hand, and the month's bill."""

from __future__ import annotations

import statistics

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
    assert rho == pytest.approx(0.85)  # the book's one ratio: the rate card's median
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


# ----------------------------------------------------------------------------- a year (issue 25)

EXAM = [2.0] * 12 + [6.0] * 12      # two replicas all day, six for twelve hours
NORMAL = [1.0] * 24


def test_one_reserved_ratio_for_the_whole_book_with_its_readings():
    readings = pr.reserved_ratio_readings()
    assert readings["h200"] == pytest.approx(2.79 / 3.99)  # the rate card's H200 row: 0.70
    assert readings["h100-sxm"] == pytest.approx(0.85)
    assert pr.RESERVED_RATIO == pytest.approx(statistics.median(readings.values()))
    for gpu in ("h100-sxm", "h200", "b200", "a100-80gb", "mi300x", "l40s"):
        assert pr.price_ratio(gpu, "reserved")[0] == pr.RESERVED_RATIO
    assert "assumption" in pr.price_ratio("h200", "reserved")[1]


def test_instance_shapes_are_listed_with_sources():
    shapes = dict(pr.instance_shapes("h200"))
    assert set(shapes) == {1, 8} and all(shapes.values())
    assert pr.instance_gpus_for("h200", 1)[0] == 1
    assert pr.instance_gpus_for("h200", 2)[0] == 8   # TP2 needs one machine of at least 2 GPUs
    assert pr.instance_gpus_for("h200", 16)[0] == 16  # two whole 8-GPU machines


def test_a_year_by_hand():
    """42 exam days of EXAM and 323 normal days of NORMAL, one-GPU replicas at the catalog's H200
    price: instance k's hours of the year, the ρ × 8,760 h rule, and the bill by kind."""
    y = pr.buy_year(EXAM, NORMAL, exam_days=42, normal_days=323, gpus_per_replica=1, gpu="h200",
                    instance_gpus=1)
    assert y.hours_in_service[:3] == pytest.approx([8760.0, 42 * 24.0, 42 * 12.0])
    assert y.threshold_hours == pytest.approx(pr.RESERVED_RATIO * 8760)
    assert y.reserved_instances == 1                   # only the first runs all year
    od = 3.7
    assert y.yearly_cost["reserved"] == pytest.approx(365 * 24 * od * pr.RESERVED_RATIO)
    burst_exam, burst_normal = 12 * 1.0 + 12 * 5.0, 0.0
    assert y.on_demand_gpu_hours_exam_day == pytest.approx(burst_exam)
    assert y.yearly_cost["on_demand"] == pytest.approx(42 * burst_exam * od)
    assert y.monthly_cost_exam["total"] == pytest.approx(
        30 * 24 * od * pr.RESERVED_RATIO + 30 * burst_exam * od)
    assert y.monthly_cost_normal["on_demand"] == pytest.approx(30 * burst_normal * od)
    assert y.yearly_cost_all_on_demand == pytest.approx((42 * sum(EXAM) + 323 * 24) * od)


def test_a_year_of_exam_days_reserves_what_a_day_reserves():
    y = pr.buy_year(EXAM, EXAM, exam_days=100, normal_days=265, gpus_per_replica=1, gpu="h200",
                    instance_gpus=1)
    assert y.reserved_instances == pr.reserved_replicas(EXAM, pr.RESERVED_RATIO)


def test_replicas_in_bigger_instances_pay_for_whole_machines():
    y = pr.buy_year([1.0] * 24, [1.0] * 24, exam_days=42, normal_days=323, gpus_per_replica=1,
                    gpu="h200", instance_gpus=8)
    assert y.reserved_gpus == 8  # one replica a day still rents a whole 8-GPU machine


def test_bad_year_input_is_refused_by_name():
    with pytest.raises(ValueError, match="normal_days"):
        pr.buy_year(EXAM, NORMAL, exam_days=300, normal_days=100, gpus_per_replica=1, gpu="h200")
    with pytest.raises(ValueError, match="24 hourly"):
        pr.buy_year(EXAM[:5], NORMAL, exam_days=1, normal_days=1, gpus_per_replica=1, gpu="h200")
