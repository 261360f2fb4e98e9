"""What the prefix cache is worth in capacity: the calculator, the fleet model and the planner agree."""

from __future__ import annotations

import math

import pytest

from vidya_lab import caching, catalog, plan, sizing
from vidya_lab.scenario import TANVI

R = caching.default_replica()


def test_capacity_with_the_planners_prefix():
    k = plan.prefix_tokens(TANVI)
    without, with_ = caching.capacity_with_cache(R, k)
    assert (without["cached_tokens"], with_["cached_tokens"]) == (0, 3392)
    assert with_["prefill_tokens_per_request"] == 3550 - 3392 == 158
    assert with_["kv_tokens_per_sequence"] == 3900 - 3392
    for row in (without, with_):
        assert row["capacity_rps"] == sizing.capacity_rps(R, 3550, 350, 0.1,
                                                          cached_tokens=row["cached_tokens"])
        # one capacity: the calculator and the fleet's replica model within 6 %
        assert row["fleet_capacity_rps"] == pytest.approx(row["capacity_rps"], rel=0.06)
        assert row["replicas_for_peak"] == math.ceil(TANVI.exam_peak_rps / row["capacity_rps"])
    assert with_["capacity_rps"] > 3 * without["capacity_rps"]
    assert with_["batch"] > without["batch"]


def test_capacity_by_precision_rows():
    rows = caching.capacity_by_precision(cached_tokens=3392)
    assert [(x["gpu"], x["precision"], x["kv_precision"]) for x in rows] == list(caching.PRECISION_OPTIONS)
    first = rows[0]
    assert first["capacity_rps"] == caching.capacity_with_cache(R, 3392)[1]["capacity_rps"]
    for x in rows:
        price = catalog.get_gpu(x["gpu"]).price_per_hour_usd
        assert x["gpus_for_peak"] == x["replicas_for_peak"] * x["tp"]
        assert x["usd_per_hour"] == pytest.approx(x["gpus_for_peak"] * price)
    fp4 = [x for x in rows if x["precision"] == "fp4"]
    fp8_b200 = next(x for x in rows if x["gpu"] == "b200" and x["precision"] == "fp8")
    assert all(x["weights_bytes_per_gpu"] < fp8_b200["weights_bytes_per_gpu"] for x in fp4)
    assert all(x["capacity_rps"] > fp8_b200["capacity_rps"] for x in fp4)  # native fp4 math


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="cached_tokens"):
        caching.capacity_with_cache(R, 3550)
    with pytest.raises(TypeError, match="options"):
        caching.capacity_by_precision(options="b200")
    with pytest.raises(TypeError, match=r"options\[0\]"):
        caching.capacity_by_precision(options=[("b200", "fp4")])
    with pytest.raises(ValueError, match="peak_rps"):
        caching.capacity_with_cache(R, 0, peak_rps=0.0)
