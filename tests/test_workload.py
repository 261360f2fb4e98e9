"""vidya_lab.workload: arrival processes and length distributions against their known laws."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import workload as wl


def test_poisson_count_gaps_and_reproducibility():
    a = wl.poisson_arrivals(5.0, 20_000.0, seed=1)
    assert np.array_equal(a, wl.poisson_arrivals(5.0, 20_000.0, seed=1))
    assert not np.array_equal(a, wl.poisson_arrivals(5.0, 20_000.0, seed=2))
    mean = 5.0 * 20_000
    assert abs(a.size - mean) < 4 * math.sqrt(mean)
    gaps = np.diff(a)
    assert gaps.mean() == pytest.approx(1 / 5.0, rel=0.02)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)  # exponential: CV = 1
    assert wl.poisson_arrivals(0.0, 10.0, seed=0).size == 0


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 50.0), st.floats(0.1, 100.0), st.integers(0, 2**32 - 1))
def test_arrivals_sorted_and_inside_the_window(rate, duration, seed):
    a = wl.poisson_arrivals(rate, duration, seed=seed)
    assert np.all(np.diff(a) >= 0) and (a.size == 0 or (a[0] >= 0 and a[-1] < duration))


def window_counts(times, duration, width):
    return np.histogram(times, bins=np.arange(0.0, duration + width / 2, width))[0]


def test_mmpp_mean_rate_and_burstiness():
    rates, dwell, duration = (1.0, 20.0), (60.0, 15.0), 200_000.0
    a = wl.mmpp_arrivals(rates, dwell, duration, seed=4)
    expected_rate = (1.0 * 60 + 20.0 * 15) / 75  # 4.8 requests/s
    assert a.size / duration == pytest.approx(expected_rate, rel=0.05)
    counts = window_counts(a, duration, 10.0)
    assert counts.var() / counts.mean() > 5  # far burstier than Poisson (index of dispersion 1)
    p = window_counts(wl.poisson_arrivals(expected_rate, duration, seed=4), duration, 10.0)
    assert p.var() / p.mean() == pytest.approx(1.0, abs=0.1)


def test_on_off_is_silent_when_off():
    a = wl.on_off_arrivals(10.0, 5.0, 5.0, 10_000.0, seed=2)
    assert a.size / 10_000 == pytest.approx(5.0, rel=0.1)
    assert np.max(np.diff(a)) > 5.0  # long silences appear


def test_thinning_follows_a_step_rate_and_refuses_a_false_bound():
    def rate(t):
        return np.where(t < 1000.0, 2.0, 8.0)

    a = wl.nonhomogeneous_arrivals(rate, 2000.0, rate_max_per_s=8.0, seed=3, chunk_s=300)
    first, second = np.count_nonzero(a < 1000), np.count_nonzero(a >= 1000)
    assert abs(first - 2000) < 4 * math.sqrt(2000)
    assert abs(second - 8000) < 4 * math.sqrt(8000)
    with pytest.raises(ValueError, match="above rate_max_per_s"):
        wl.nonhomogeneous_arrivals(rate, 2000.0, rate_max_per_s=4.0, seed=3)


def test_student_day_shape_and_exam_season():
    day = wl.student_day_profile(2.0)
    exam = wl.student_day_profile(2.0, exam_season=True)
    hour = 3600.0
    assert day.rate_per_s(20.5 * hour) == pytest.approx(2.0)          # evening peak
    assert day.rate_per_s(4 * hour) == pytest.approx(2.0 * 0.03)       # quiet night
    assert day.rate_per_s(7 * hour) > 2 * day.rate_per_s(10 * hour)     # the 7 am rush
    assert exam.rate_per_s(7 * hour) == pytest.approx(10 * day.rate_per_s(7 * hour))
    assert day.rate_per_s(24 * hour) == pytest.approx(day.rate_per_s(0.0))  # wraps at midnight
    assert day.expected_count() == pytest.approx(day.mean_rate_per_s() * 86400, rel=1e-4)
    arrivals = day.arrivals(seed=5)
    expected = day.expected_count()
    assert abs(arrivals.size - expected) < 4 * math.sqrt(expected)
    by_hour = np.bincount((arrivals // hour).astype(int), minlength=24)
    assert by_hour[20] > by_hour[7] > by_hour[11] > by_hour[3]


def test_max_rate_between_is_a_true_bound():
    day = wl.student_day_profile(1.0, start_hour=5.5)
    t = np.linspace(0, 86400, 200_001)
    rates = day.rate_per_s(t)
    for a, b in [(0, 3600), (3600 * 14, 3600 * 16), (1234.5, 50_000.0)]:
        inside = rates[(t >= a) & (t <= b)]
        assert day.max_rate_between(a, b) >= inside.max() - 1e-12
        assert day.max_rate_between(a, b) == pytest.approx(inside.max(), rel=1e-3)


def test_lognormal_from_mean_and_median():
    d = wl.LognormalLength(mean_tokens=350, p50_tokens=250)
    x = d.sample(400_000, 7)
    assert x.dtype == np.int64 and x.min() >= 1
    assert np.median(x) == pytest.approx(250, rel=0.02)
    assert x.mean() == pytest.approx(350, rel=0.02)
    assert wl.LognormalLength(100, 100).sample(10, 0).tolist() == [100] * 10  # sigma = 0
    assert wl.LognormalLength(350, 250, max_tokens=400).sample(10_000, 1).max() == 400
    with pytest.raises(ValueError, match="p50_tokens .* must be <= mean_tokens"):
        wl.LognormalLength(mean_tokens=100, p50_tokens=200)


def test_fixed_and_empirical_lengths():
    assert wl.FixedLength(7).sample(3, 0).tolist() == [7, 7, 7]
    e = wl.EmpiricalLength((10, 20, 30), weights=(0.0, 1.0, 3.0))
    x = e.sample(40_000, 2)
    assert set(np.unique(x)) == {20, 30}
    assert np.mean(x == 30) == pytest.approx(0.75, abs=0.01)
    assert e.mean_tokens == pytest.approx(27.5)
    with pytest.raises(ValueError, match="at least one"):
        wl.EmpiricalLength(())


def test_arrivals_are_sorted_whatever_order_they_come_in():
    """make_workload sorts its arrivals (and skips the sort only when they are already in order):
    a shuffled copy gives the same workload, and the caller's array is never modified."""
    from vidya_lab.workload.arrivals import sorted_copy

    arrivals = wl.poisson_arrivals(3.0, 100.0, seed=4)
    shuffled = np.random.default_rng(4).permutation(arrivals)
    kept = shuffled.copy()
    w = wl.make_workload(shuffled, prompt_tokens=wl.FixedLength(50),
                         output_tokens=wl.FixedLength(5), seed=0)
    assert np.array_equal(w.arrival_s, arrivals)
    assert np.array_equal(shuffled, kept)
    assert np.array_equal(sorted_copy(shuffled), arrivals)
    already = sorted_copy(arrivals)
    assert np.array_equal(already, arrivals) and already is not arrivals
    assert not np.shares_memory(already, arrivals)


def test_make_workload_shared_prefix_and_classes():
    arrivals = wl.poisson_arrivals(10.0, 1000.0, seed=0)
    w = wl.make_workload(arrivals, prompt_tokens=wl.FixedLength(50),
                         output_tokens=wl.LognormalLength(200, 150), seed=1,
                         classes={"interactive": 0.8, "batch": 0.2},
                         shared_prefix_tokens=40_000, shared_prefix_fraction=0.25,
                         shared_prefix_id=3)
    assert len(w) == arrivals.size and np.all(np.diff(w.arrival_s) >= 0)
    with_doc = w.prefix_id == 3
    assert np.mean(with_doc) == pytest.approx(0.25, abs=0.02)
    assert np.all(w.prompt_tokens[with_doc] == 40_050) and np.all(w.prompt_tokens[~with_doc] == 50)
    assert np.all(w.prefix_tokens[~with_doc] == 0) and np.all(w.prefix_id[~with_doc] == -1)
    assert np.mean(w.klass == "batch") == pytest.approx(0.2, abs=0.02)
    r = w[0]
    assert isinstance(r, wl.Request) and r.arrival_s == w.arrival_s[0]
    again = wl.make_workload(arrivals, prompt_tokens=wl.FixedLength(50),
                             output_tokens=wl.LognormalLength(200, 150), seed=1,
                             classes={"interactive": 0.8, "batch": 0.2},
                             shared_prefix_tokens=40_000, shared_prefix_fraction=0.25,
                             shared_prefix_id=3)
    assert np.array_equal(w.output_tokens, again.output_tokens)
    assert len(w[w.klass == "batch"]) == np.count_nonzero(w.klass == "batch")


def test_workload_from_requests_round_trip_and_sorting():
    reqs = [wl.Request(0, 2.0, 100, 10), wl.Request(1, 1.0, 40_100, 5, prefix_id=0,
                                                    prefix_tokens=40_000, klass="upload")]
    w = wl.Workload.from_requests(reqs)
    assert w.arrival_s.tolist() == [1.0, 2.0]
    assert w[0].klass == "upload" and w[0].prefix_tokens == 40_000
    assert w.total_tokens() == {"prompt_tokens": 40_200, "output_tokens": 15}


def test_bad_inputs_name_the_parameter():
    with pytest.raises(ValueError, match="rate_per_s must be >= 0"):
        wl.poisson_arrivals(-1, 10, seed=0)
    with pytest.raises(ValueError, match="duration_s must be > 0"):
        wl.poisson_arrivals(1, 0, seed=0)
    with pytest.raises(TypeError, match="seed must be"):
        wl.poisson_arrivals(1, 10, seed=None)
    with pytest.raises(ValueError, match="limit"):
        wl.poisson_arrivals(1e6, 1e6, seed=0)
    with pytest.raises(ValueError, match="one entry per state"):
        wl.mmpp_arrivals((1, 2), (1,), 10, seed=0)
    with pytest.raises(ValueError, match="sum to 1"):
        wl.make_workload([0.0], prompt_tokens=wl.FixedLength(1), output_tokens=wl.FixedLength(1),
                         seed=0, classes={"a": 0.5})
    with pytest.raises(ValueError, match="prefix_tokens must be <= prompt_tokens"):
        wl.Workload.from_arrays([0.0], [10], [5], prefix_id=[0], prefix_tokens=[20])
    with pytest.raises(ValueError, match="output_tokens must be >= 0"):
        wl.Workload.from_arrays([0.0], [10], [-5])
    with pytest.raises(ValueError, match="strictly increasing"):
        wl.DiurnalProfile(hours=(5.0, 3.0), relative=(1.0, 0.5), peak_rate_per_s=1.0)
    with pytest.raises(TypeError, match="length distributions"):
        wl.make_workload([0.0], prompt_tokens=100, output_tokens=wl.FixedLength(1), seed=0)


def test_merge_adds_one_upload_to_student_traffic():
    students = wl.make_workload(wl.poisson_arrivals(2.0, 60.0, seed=1),
                                prompt_tokens=wl.FixedLength(200), output_tokens=wl.FixedLength(100),
                                seed=2)
    upload = wl.Workload.from_requests([wl.Request(0, 30.0, 40_000, 500, klass="upload")])
    both = wl.Workload.merge(students, upload)
    assert len(both) == len(students) + 1 and np.all(np.diff(both.arrival_s) >= 0)
    assert both.total_tokens()["prompt_tokens"] == 200 * len(students) + 40_000
    assert list(both.klass).count("upload") == 1
    with pytest.raises(TypeError, match="Workload"):
        wl.Workload.merge(students, [1, 2])


# ----------------------------------------------------------------------------- issue 16: bounds and names

def test_day_counts_and_bounds_are_exact_for_any_window():
    day = wl.student_day_profile(2.0, start_hour=5.5)
    per_day = day.mean_rate_per_s() * 86400
    assert day.expected_count(86400 * 3) == pytest.approx(3 * per_day, rel=1e-12)
    # 1e9 s = 11,574 whole days and a remainder: exact, in constant time (was a 1e9-point grid)
    whole, rest = divmod(1e9, 86400.0)
    t = np.linspace(whole * 86400, 1e9, 20_001)
    remainder = float(np.trapezoid(day.rate_per_s(t), t))  # the curve repeats daily
    assert day.expected_count(1e9) == pytest.approx(whole * per_day + remainder, rel=1e-9)
    assert day.expected_count(0.0) == 0.0
    assert day.max_rate_between(0, 1e12) == pytest.approx(2.0)  # a day or more holds the peak
    with pytest.raises(ValueError, match="t0_s must be finite"):
        day.max_rate_between(float("nan"), float("nan"))
    with pytest.raises(ValueError, match="t1_s must be >="):
        day.max_rate_between(5.0, 1.0)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 23.99), st.floats(1.0, 3 * 86400.0))
def test_expected_count_is_the_integral_of_the_rate(start_hour, duration):
    day = wl.student_day_profile(3.0, start_hour=start_hour)
    t = np.linspace(0.0, duration, 200_001)
    assert day.expected_count(duration) == pytest.approx(
        float(np.trapezoid(day.rate_per_s(t), t)), rel=1e-3, abs=1e-6)


def test_huge_windows_are_refused_before_anything_is_allocated():
    from vidya_lab import autoscaling

    with pytest.raises(ValueError, match="arrivals; the limit is 1e\\+07"):
        wl.student_day_profile(6.0).arrivals(1e15, seed=0)
    with pytest.raises(ValueError, match="limit"):  # the case, through the fleet's workload
        autoscaling.day_workload("normal", seed=0, duration_s=1e15)
    silent = wl.DiurnalProfile(hours=(0.0, 12.0), relative=(1.0, 0.5), peak_rate_per_s=1.0,
                               multiplier=0.0)
    with pytest.raises(ValueError, match="chunks; the limit is 1e\\+05"):
        silent.arrivals(1e15, seed=0)  # zero arrivals expected, but 2.8e11 chunks
    assert silent.arrivals(86400.0, seed=0).size == 0
    with pytest.raises(ValueError, match="state changes; the limit is 1e\\+06"):
        wl.mmpp_arrivals((0.0, 0.0), (1.0, 1.0), 1e12, seed=0)  # zero rates hung
    assert wl.mmpp_arrivals((0.0, 0.0), (1.0, 1.0), 100.0, seed=0).size == 0
    with pytest.raises(ValueError, match="n must be an integer <= 50000000"):
        wl.FixedLength(1).sample(10**9, 0)


def test_wrong_types_and_flags_are_named():
    with pytest.raises(TypeError, match="arrival_s must be a sequence"):
        wl.make_workload(True, prompt_tokens=wl.FixedLength(1), output_tokens=wl.FixedLength(1), seed=0)
    with pytest.raises(ValueError, match="arrival_s"):
        wl.make_workload([[0.0, 1.0]], prompt_tokens=wl.FixedLength(1),
                         output_tokens=wl.FixedLength(1), seed=0)
    with pytest.raises(TypeError, match="exam_season must be True or False"):
        wl.student_day_profile(2.0, exam_season="False")
    with pytest.raises(TypeError, match="scenario"):
        wl.tutor_requests([0.0], seed=0, scenario={"syllabus_prompt_tokens": 1})
    with pytest.raises(TypeError, match="rates_per_s"):
        wl.mmpp_arrivals(5, (1.0, 1.0), 10.0, seed=0)
    with pytest.raises(TypeError, match="hours"):
        wl.DiurnalProfile(hours=5, relative=(1.0,), peak_rate_per_s=1.0)
    with pytest.raises(TypeError, match="values"):
        wl.EmpiricalLength(5)
    with pytest.raises(TypeError, match="requests"):
        wl.Workload.from_requests(5)
    with pytest.raises(TypeError, match="classes"):
        wl.make_workload([0.0], prompt_tokens=wl.FixedLength(1), output_tokens=wl.FixedLength(1),
                         seed=0, classes=[("a", 1.0)])
    with pytest.raises(ValueError, match="prompt_tokens must be at most"):
        wl.Workload.from_arrays([0.0], [1e30], [1])
