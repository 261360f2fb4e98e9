"""The capstone design exercise's rubric and the year's purchase rule behind its reference figures."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import procurement
from vidya_lab.exercises.key import capstone


def test_rubric_is_out_of_ten_and_every_line_says_what_earns_marks():
    assert capstone.TOTAL_POINTS == 10
    names = [c.name for c in capstone.RUBRIC]
    assert len(names) == len(set(names))
    for c in capstone.RUBRIC:
        assert c.points >= 1 and len(c.full) > 40 and len(c.half) > 20


def test_year_rule_by_hand():
    flat2 = [2.0] * 24
    assert capstone.reserved_for_year([(flat2, 365)], rho=0.7) == 2
    # a third replica needed only on 56 exam days: 56 × 24 = 1,344 h < 0.7 × 8,760 = 6,132 h
    exam, normal = [3.0] * 24, [1.0] * 24
    assert capstone.reserved_for_year([(exam, 56), (normal, 309)], rho=0.7) == 1
    # at exactly the break-even hours the reservation is taken (it costs the same either way)
    assert capstone.reserved_for_year([([1.0] * 24, 219)], rho=219 / 365) == 1
    assert capstone.reserved_for_year([([1.0] * 24, 218)], rho=219 / 365) == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 12, allow_nan=False), min_size=24, max_size=24),
       st.sampled_from(["h100-sxm", "h200", "b200"]))
def test_a_year_of_one_day_reserves_what_the_months_rule_reserves(curve, gpu):
    rho, _ = procurement.price_ratio(gpu, "reserved")
    month = procurement.buy(curve, gpus_per_replica=1, gpu=gpu).reserved_replicas
    assert capstone.reserved_for_year([(curve, 365)], rho=rho) == month


@pytest.mark.parametrize("curves, match", [
    ([([1.0] * 23, 10)], "24 hourly values"),
    ([([1.0] * 24, 200), ([1.0] * 24, 200)], "at most 366"),
    ([([-1.0] * 24, 10)], "replicas_by_hour"),
    ([([1.0] * 24, 1.5)], "days"),
])
def test_bad_curves_are_named(curves, match):
    with pytest.raises((ValueError, TypeError), match=match):
        capstone.reserved_for_year(curves, rho=0.7)
    with pytest.raises(ValueError, match="rho"):
        capstone.reserved_for_year([([1.0] * 24, 10)], rho=0.0)
