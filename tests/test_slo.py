"""vidya_lab.slo: metrics on hand-built timelines with known answers, and their properties."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import slo
from vidya_lab.slo import SLO, RequestTimeline, Timelines

DATA = Path(__file__).parent / "data" / "slo"


def hand_trace() -> list[RequestTimeline]:
    """Three finished requests and one rejected, with answers worked out by hand below."""
    return [
        # a=0, s=0.3, f=0.5, c=2.5, n=5: wait 0.3, TTFT 0.5, TPOT (2.5-0.5)/4 = 0.5, e2e 2.5
        RequestTimeline("r1", 0.0, 0.5, 2.5, 5, admitted_s=0.3),
        # a=1, f=1.2, c=2.2, n=11: TTFT 0.2, TPOT 1.0/10 = 0.1, e2e 1.2
        RequestTimeline("r2", 1.0, 1.2, 2.2, 11, admitted_s=1.0),
        # one-token answer: TTFT 1.0, TPOT undefined, e2e 1.0
        RequestTimeline("r3", 2.0, 3.0, 3.0, 1),
        RequestTimeline("r4", 3.0, None, 3.0, 0, outcome="rejected"),
    ]


def test_per_request_metrics_match_hand_values():
    t = hand_trace()
    assert slo.ttft_s(t) == pytest.approx([0.5, 0.2, 1.0])
    assert slo.e2e_s(t) == pytest.approx([2.5, 1.2, 1.0])
    tp = slo.tpot_s(t)
    assert tp[:2] == pytest.approx([0.5, 0.1]) and math.isnan(tp[2])
    assert slo.queue_wait_s(t) == pytest.approx([0.3, 0.0])
    speed = slo.tokens_per_s_per_user(t)
    assert speed[:2] == pytest.approx([2.0, 10.0]) and math.isnan(speed[2])


def test_throughput_counts_finished_tokens_over_the_run():
    th = slo.throughput(hand_trace())
    # 5 + 11 + 1 output tokens over [0, 3.0] s; 3 finished requests
    assert th["duration_s"] == pytest.approx(3.0)
    assert th["output_tokens_per_s"] == pytest.approx(17 / 3.0)
    assert th["requests_per_s"] == pytest.approx(1.0)


def test_summary_and_attainment_hand_values():
    t = hand_trace()
    s = slo.summarize(t, SLO(ttft_s=0.6))
    assert (s["count"], s["finished"], s["rejected"], s["tpot_undefined"]) == (4, 3, 1, 1)
    # linear percentiles of [0.2, 0.5, 1.0]: p50 = 0.5; p99 at rank 1.98 = 0.5 + 0.98 * 0.5
    assert s["ttft_s"]["p50"] == pytest.approx(0.5)
    assert s["ttft_s"]["p99"] == pytest.approx(0.99)
    assert s["ttft_s"]["mean"] == pytest.approx(1.7 / 3)
    assert s["tpot_s"]["p50"] == pytest.approx(0.3)  # of [0.1, 0.5]; the one-token answer left out
    # r1 and r2 meet TTFT <= 0.6; r3 does not; rejected r4 counts as missed
    assert s["attainment"] == pytest.approx(0.5)
    assert slo.attainment(t, SLO(tpot_s=0.2)) == pytest.approx(0.5)  # r2, and r3 vacuously
    assert slo.attainment(t, SLO(ttft_s=0.6, tpot_s=0.2)) == pytest.approx(0.25)
    assert slo.attainment(t, SLO(e2e_s=1.0)) == pytest.approx(0.25)
    assert "attainment" not in slo.summarize(t)


def test_goodput_first_sense_is_slo_meeting_requests_per_second():
    t = hand_trace()
    assert slo.goodput_requests_per_s(t, SLO(ttft_s=0.6)) == pytest.approx(2 / 3.0)
    assert slo.goodput_requests_per_s(t, SLO(ttft_s=0.6), duration_s=10) == pytest.approx(0.2)


def test_itl_differs_from_tpot_when_a_step_emits_several_tokens():
    # one token per step every 0.1 s: ITL gaps = TPOT = 0.1
    even = RequestTimeline(0, 0.0, 1.0, 1.4, 5, token_times_s=(1.0, 1.1, 1.2, 1.3, 1.4))
    # speculative decoding: 3 tokens at once, then 2: one gap of 0.3 s carrying 2 tokens' time
    spec = RequestTimeline(1, 0.0, 1.0, 1.3, 5, token_times_s=(1.0, 1.0, 1.0, 1.3, 1.3))
    assert slo.itl_s([even]) == pytest.approx([0.1] * 4)
    assert slo.tpot_s([even]) == pytest.approx([0.1])
    assert slo.itl_s([spec]) == pytest.approx([0.3])
    assert slo.tpot_s([spec]) == pytest.approx([0.075])
    both = Timelines.from_records([even, spec])
    assert slo.itl_s(both).size == 5  # gaps never straddle two requests


def test_itl_needs_token_times():
    with pytest.raises(ValueError, match="token_times_s"):
        slo.itl_s(hand_trace())


def test_percentile_methods_and_fleet_pitfall():
    values = [1.0, 2.0, 3.0, 4.0]
    assert slo.percentile(values, 50) == pytest.approx(2.5)
    assert slo.percentile(values, 50, method="inverted_cdf") == pytest.approx(2.0)
    # replica A: 98 fast requests and 2 slow; replica B: 10 slow ones
    a = [0.1] * 98 + [5.0] * 2
    b = [3.0] * 10
    pooled = slo.pooled_percentile([a, b], 99)
    naive = slo.mean_of_percentiles([a, b], 99)
    assert pooled == pytest.approx(slo.percentile(a + b, 99))
    assert naive == pytest.approx((slo.percentile(a, 99) + 3.0) / 2)
    assert abs(pooled - naive) > 0.5


def test_percentile_summary_of_nothing_is_null_not_an_error():
    assert slo.percentile_summary([]) == {"p50": None, "p90": None, "p95": None, "p99": None,
                                          "mean": None}
    assert slo.percentile_summary([math.nan, math.nan])["p99"] is None
    assert set(slo.percentile_summary([1.0])) == {"p50", "p90", "p95", "p99", "mean"}
    with pytest.raises(ValueError, match="no values"):
        slo.percentile([], 99)


def test_bootstrap_ci_is_seeded_and_narrows_with_more_data():
    rng = np.random.default_rng(3)
    small = rng.exponential(1.0, 100)
    big = rng.exponential(1.0, 10_000)
    ci_small = slo.bootstrap_percentile_ci(small, 99, seed=1, n_boot=500)
    assert ci_small == slo.bootstrap_percentile_ci(small, 99, seed=1, n_boot=500)
    ci_big = slo.bootstrap_percentile_ci(big, 99, seed=1, n_boot=200)
    assert ci_small[0] <= slo.percentile(small, 99) <= ci_small[1]
    assert ci_big[1] - ci_big[0] < (ci_small[1] - ci_small[0]) / 2
    # the true p99 of Exp(1) is ln(100) = 4.605; the big sample's interval covers it
    assert ci_big[0] < math.log(100) < ci_big[1]


def test_distserve_goodput_search_finds_the_threshold_rate():
    # a fake simulator whose attainment is exactly 1 - rate/20: attainment >= 0.9 up to rate 2
    def simulate(rate):
        n = 1000
        bad = int(round(n * rate / 20))
        ttft = np.where(np.arange(n) < bad, 5.0, 0.1)
        return Timelines.from_arrays(arrival_s=np.zeros(n), first_token_s=ttft,
                                     finish_s=ttft + 1, output_tokens=np.full(n, 10))

    res = slo.max_rate_meeting_slo(simulate, SLO(ttft_s=1.0), target_attainment=0.9,
                                   rate_lo_per_s=0.5, rate_hi_per_s=10, rel_tol=0.01)
    assert res.rate_per_s == pytest.approx(2.0, rel=0.02)
    assert res.attainment >= 0.9
    assert all(a >= 0.9 for r, a in res.evaluated if r <= res.rate_per_s)
    low = slo.max_rate_meeting_slo(simulate, SLO(ttft_s=1.0), target_attainment=0.99,
                                   rate_lo_per_s=1.0, rate_hi_per_s=10)
    assert low.rate_per_s == 0.0  # even the lowest rate misses a 99 % target


def test_latency_budget_and_reading_speed():
    b = slo.latency_budget(2.0, prefill_s=0.5, network_s=0.2)
    assert b.queueing_s == pytest.approx(1.3) and b.feasible
    assert not slo.latency_budget(0.5, prefill_s=0.5, network_s=0.2).feasible
    # 250 words/min at 1.3 tokens/word = 5.4167 tokens/s -> 0.1846 s per token
    assert slo.tpot_for_reading_speed(250, tokens_per_word=1.3) == pytest.approx(60 / 325)
    assert slo.tpot_for_reading_speed(250, tokens_per_word=1.3, headroom=2) == pytest.approx(30 / 325)


def test_columnar_and_record_forms_agree_and_round_trip():
    recs = hand_trace()
    t = Timelines.from_records(recs)
    assert len(t) == 4 and t.counts() == {"count": 4, "finished": 3, "rejected": 1, "timed_out": 0}
    assert t.records() == recs
    assert t[1] == recs[1]
    sub = t[t.finished]
    assert len(sub) == 3 and slo.ttft_s(sub) == pytest.approx(slo.ttft_s(recs))
    fleet = Timelines.concat([t[:2], t[2:]])
    assert slo.summarize(fleet) == slo.summarize(t)


def test_timeline_validation_names_the_request_and_problem():
    with pytest.raises(ValueError, match="request 'x': first_token_s .* before arrival_s"):
        RequestTimeline("x", 2.0, 1.0, 3.0, 4)
    with pytest.raises(ValueError, match="finish_s .* before first_token_s"):
        RequestTimeline("x", 0.0, 1.0, 0.5, 4)
    with pytest.raises(ValueError, match="output_tokens >= 1"):
        RequestTimeline("x", 0.0, 1.0, 2.0, 0)
    with pytest.raises(ValueError, match="outcome must be one of"):
        RequestTimeline("x", 0.0, 1.0, 2.0, 3, outcome="done")
    with pytest.raises(ValueError, match="token_times_s has 2 times"):
        RequestTimeline("x", 0.0, 1.0, 2.0, 3, token_times_s=(1.0, 2.0))
    with pytest.raises(ValueError, match=r"request 1 \(id 7\)"):
        Timelines.from_arrays(arrival_s=[0.0, 5.0], first_token_s=[1.0, 4.0], finish_s=[2.0, 6.0],
                              output_tokens=[3, 3], request_id=[6, 7])
    with pytest.raises(TypeError, match="SLO"):
        slo.attainment(hand_trace(), {"ttft_s": 1})
    with pytest.raises(ValueError, match="ttft_s must be > 0"):
        SLO(ttft_s=0)
    with pytest.raises(ValueError, match="empty trace"):
        slo.attainment([], SLO(ttft_s=1))


def test_a_million_requests_need_no_python_objects():
    n = 1_000_000
    rng = np.random.default_rng(0)
    a = np.sort(rng.uniform(0, 86400, n))
    f = a + rng.exponential(0.5, n)
    out = rng.integers(1, 500, n)
    c = f + 0.05 * (out - 1)
    t = Timelines.from_arrays(arrival_s=a, first_token_s=f, finish_s=c, output_tokens=out)
    s = slo.summarize(t, SLO(ttft_s=2.0, tpot_s=0.1))
    assert s["count"] == n and s["tpot_s"]["p50"] == pytest.approx(0.05)
    assert s["attainment"] == pytest.approx(1 - math.exp(-4), abs=0.005)  # P(Exp(0.5) <= 2)


# ----------------------------------------------------------------------------- properties

finite = st.floats(0.0, 100.0, allow_nan=False)


@st.composite
def timelines(draw, max_size=30):
    n = draw(st.integers(1, max_size))
    a = np.asarray(draw(st.lists(finite, min_size=n, max_size=n)))
    wait = np.asarray(draw(st.lists(finite, min_size=n, max_size=n)))
    decode = np.asarray(draw(st.lists(finite, min_size=n, max_size=n)))
    out = np.asarray(draw(st.lists(st.integers(1, 50), min_size=n, max_size=n)))
    outcome = np.asarray(draw(st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=n, max_size=n)),
                         dtype=np.int8)
    f = np.where(outcome == 0, a + wait, np.nan)
    c = np.where(outcome == 0, f + decode, a + wait)
    return Timelines.from_arrays(arrival_s=a, first_token_s=f, finish_s=c,
                                 output_tokens=np.where(outcome == 0, out, 0), outcome=outcome)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=50),
       st.floats(0, 100), st.floats(0, 100))
def test_percentiles_are_monotone_in_q(values, q1, q2):
    lo, hi = sorted((q1, q2))
    assert slo.percentile(values, lo) <= slo.percentile(values, hi)
    s = slo.percentile_summary(values)
    assert s["p50"] <= s["p90"] <= s["p95"] <= s["p99"] <= max(values)


targets = st.one_of(st.none(), st.floats(0.01, 200.0))


@settings(max_examples=60, deadline=None)
@given(timelines(), targets, targets, targets, st.floats(1.0, 3.0))
def test_attainment_in_unit_interval_and_monotone_in_targets(t, ttft, tpot, e2e, loosen):
    tight = SLO(ttft, tpot, e2e)
    loose = SLO(*(None if x is None else x * loosen for x in (ttft, tpot, e2e)))
    a, b = slo.attainment(t, tight), slo.attainment(t, loose)
    assert 0.0 <= a <= b <= 1.0
    # never above the finished fraction: rejected and timed-out requests always miss
    assert b <= t.counts()["finished"] / len(t)


@settings(max_examples=40, deadline=None)
@given(timelines())
def test_one_token_answers_have_undefined_tpot_reported_not_crashing(t):
    s = slo.summarize(t, SLO(tpot_s=0.1))
    fin = t.finished
    one_token = int(np.count_nonzero(t.output_tokens[fin] == 1))
    assert s["tpot_undefined"] == one_token
    if one_token == s["finished"]:
        assert s["tpot_s"]["p50"] is None
    assert 0.0 <= s["attainment"] <= 1.0


def test_trace_csv_reads_the_fixture():
    t = slo.read_trace_csv(DATA / "small_trace.csv")
    assert list(t.request_id) == ["r1", "r2", "r3", "r4"]
    assert slo.summarize(t) == slo.summarize(hand_trace())


def test_trace_csv_round_trip(tmp_path):
    from vidya_lab import toyserver

    w = toyserver.tutor_workload(2.4, 60.0, seed=5)
    t = toyserver.simulate(w, toyserver.ToyServer(max_queue=2))
    path = tmp_path / "trace.csv"
    slo.write_trace_csv(t, path)
    back = slo.read_trace_csv(path)
    assert back.counts() == t.counts() and t.counts()["rejected"] > 0
    assert slo.summarize(back, SLO(ttft_s=2.0)) == slo.summarize(t, SLO(ttft_s=2.0))
    assert np.array_equal(back.admitted_s, t.admitted_s, equal_nan=True)


# ----------------------------------------------------------------------------- how sure is a p99

def _mm1_sojourn_times(arrival_rate, n, seeds):
    """Time in system of n consecutive customers of a stationary M/M/1 queue (service rate 1),
    one row per seed, by Lindley's recursion W' = max(0, W + S − A): a correlated series whose
    p99 is known exactly, ln(100) / (1 − λ) (the sojourn time is exponential with rate μ − λ)."""
    rngs = [np.random.default_rng(s) for s in seeds]
    gaps = np.stack([r.exponential(1 / arrival_rate, n) for r in rngs])
    service = np.stack([r.exponential(1.0, n) for r in rngs])
    busy = np.array([r.random() < arrival_rate for r in rngs])   # start in the stationary law
    wait = np.where(busy, [r.exponential(1 / (1 - arrival_rate)) for r in rngs], 0.0)
    out = np.empty((len(seeds), n))
    for k in range(n):
        out[:, k] = wait + service[:, k]
        wait = np.maximum(0.0, wait + service[:, k] - gaps[:, k])
    return out


def test_batch_means_covers_a_queues_p99_where_the_bootstrap_is_too_narrow():
    lam, n = 0.7, 40_000
    true_p99 = math.log(100) / (1 - lam)                      # 15.35 s
    series = _mm1_sojourn_times(lam, n, seeds=range(40))
    bm = [slo.batch_means_ci(x, 99, batches=10) for x in series]
    bm_cover = np.mean([ci.low <= true_p99 <= ci.high for ci in bm])
    boot = [slo.bootstrap_percentile_ci(x, 99, n_boot=200, seed=1) for x in series[:20]]
    boot_cover = np.mean([lo <= true_p99 <= hi for lo, hi in boot])
    # nominal 95 %: batch means comes close; the bootstrap, treating queued requests as
    # independent, misses most of the time (its interval is several times too narrow)
    assert bm_cover >= 0.8, bm_cover
    assert boot_cover <= 0.6, boot_cover
    bm_width = np.mean([ci.high - ci.low for ci in bm[:20]])
    boot_width = np.mean([hi - lo for lo, hi in boot])
    assert bm_width > 2 * boot_width
    # each interval is centred on the percentile of the values it used
    ci = bm[0]
    assert ci.estimate == pytest.approx(slo.percentile(series[0][: ci.batches * ci.batch_size], 99))


def test_batch_means_of_the_mean_and_of_independent_values():
    rng = np.random.default_rng(0)
    x = rng.normal(10.0, 2.0, 10_000)
    ci = slo.batch_means_ci(x, batches=20)
    assert ci.estimate == pytest.approx(x.mean())
    assert (ci.batches, ci.batch_size, ci.confidence) == (20, 500, 0.95)
    # independent values: s/√b of batch means ≈ σ/√n
    assert ci.standard_error == pytest.approx(2.0 / math.sqrt(10_000), rel=0.4)
    assert ci.low < 10.0 < ci.high
    assert ci.high - ci.estimate == pytest.approx(slo.student_t_quantile(0.975, 19)
                                                  * ci.standard_error)
    with pytest.raises(ValueError, match="batches must be an integer >= 5"):
        slo.batch_means_ci(x, batches=2)
    with pytest.raises(ValueError, match="at least 2 values per batch"):
        slo.batch_means_ci(x[:15], batches=10)
    with pytest.raises(ValueError, match="q must be <= 100"):
        slo.batch_means_ci(x, 101)


def test_student_t_quantiles_match_the_tables():
    # two-sided 95 % and 99 % critical values (any statistics table)
    for dof, t975, t995 in ((4, 2.776, 4.604), (9, 2.262, 3.250), (19, 2.093, 2.861),
                            (29, 2.045, 2.756)):
        assert slo.student_t_quantile(0.975, dof) == pytest.approx(t975, rel=3e-3)
        assert slo.student_t_quantile(0.995, dof) == pytest.approx(t995, rel=3e-3)
    assert slo.student_t_quantile(0.5, 10) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="dof"):
        slo.student_t_quantile(0.975, 3)


def test_chi_square_quantiles_match_the_tables():
    # lower and upper critical values of any chi-square table (4 to 6 significant figures)
    for (p, dof), want in {(0.005, 4): 0.20699, (0.025, 4): 0.48442, (0.975, 4): 11.1433,
                           (0.995, 4): 14.8603, (0.05, 9): 3.32511, (0.10, 9): 4.16816,
                           (0.95, 9): 16.9190, (0.995, 9): 23.5894, (0.5, 1): 0.454936,
                           (0.05, 29): 17.7084, (0.95, 100): 124.342}.items():
        assert slo.chi_square_quantile(p, dof) == pytest.approx(want, rel=2e-5)
    # with two degrees of freedom the distribution is exponential: P(X <= x) = 1 - exp(-x/2)
    for p in (0.01, 0.3, 0.9, 0.999):
        assert slo.chi_square_quantile(p, 2) == pytest.approx(-2 * np.log1p(-p), rel=1e-8)
    with pytest.raises(ValueError, match="dof"):
        slo.chi_square_quantile(0.5, 0)
    with pytest.raises(ValueError, match="p must be"):
        slo.chi_square_quantile(1.0, 9)


# ----------------------------------------------------------------------------- boundaries (issue 16)

def test_percentiles_of_huge_values_cannot_overflow():
    s = slo.percentile_summary([1e308, -1e308])
    assert s["p50"] == 0.0 and s["mean"] == 0.0        # numpy's own interpolation gives -inf
    assert s["p99"] == pytest.approx(0.98e308)
    assert slo.percentile_summary([1.7e308, 1.7e308])["mean"] == 1.7e308
    assert slo.percentile([-1.7e308, 1.7e308], 25, method="median_unbiased") < 0
    assert slo.mean_of_percentiles([[1.7e308], [1.7e308]], 50) == 1.7e308
    lo, hi = slo.bootstrap_percentile_ci([1e308, -1e308, 5e307], 50, n_boot=50)
    assert math.isfinite(lo) and math.isfinite(hi)
    with pytest.raises(ValueError, match="finite"):
        slo.percentile([1.0, math.inf], 50)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=40))
def test_percentile_summary_is_finite_ordered_and_inside_the_range(values):
    s = slo.percentile_summary(values)
    lo, hi = min(values), max(values)
    assert lo <= s["p50"] <= s["p90"] <= s["p95"] <= s["p99"] <= hi
    assert lo <= s["mean"] <= hi


def test_write_trace_csv_refuses_a_file_descriptor_and_writes_atomically(tmp_path):
    t = Timelines.from_records(hand_trace())
    with pytest.raises(TypeError, match="path must be a file path"):
        slo.write_trace_csv(t, 1)
    import os
    os.fstat(1)                                 # stdout is still open
    with pytest.raises(ValueError, match="is a directory"):
        slo.write_trace_csv(t, tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        slo.write_trace_csv(t, tmp_path / "no" / "trace.csv")
    path = tmp_path / "trace.csv"
    path.write_text("old contents\n")
    slo.write_trace_csv(t, path)
    assert slo.summarize(slo.read_trace_csv(path)) == slo.summarize(t)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.csv"]   # no temporary left


def test_trace_csv_refuses_huge_token_counts_and_non_paths_by_name(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("request_id,arrival_s,first_token_s,finish_s,output_tokens\n"
                    "a,0,0.5,1,3\nb,0,0.5,1,1e30\n")
    with pytest.raises(ValueError, match=r"row 2 \(line 3\): output_tokens must be at most"):
        slo.read_trace_csv(path)
    with pytest.raises(TypeError, match="path must be a file path"):
        slo.read_trace_csv(0)                   # not stdin
    with pytest.raises(ValueError, match="output_tokens of request 1"):
        Timelines.from_arrays(arrival_s=[0.0, 0.0], first_token_s=[1.0, 1.0],
                              finish_s=[2.0, 2.0], output_tokens=[3.0, 1e30])
    with pytest.raises(ValueError, match="output_tokens must be <="):
        RequestTimeline("x", 0.0, 1.0, 2.0, 10**12)


def test_wrong_object_types_are_named():
    t = hand_trace()
    with pytest.raises(TypeError, match="slo must be a SLO"):
        slo.summarize(t, {"ttft_s": 1.0})
    with pytest.raises(TypeError, match="timelines must be a Timelines"):
        slo.ttft_s(5)
    with pytest.raises(TypeError, match="timelines must be a Timelines"):
        slo.summarize("trace.csv")
    with pytest.raises(TypeError, match="groups"):
        slo.pooled_percentile("abc", 99)
    with pytest.raises(TypeError, match="slo must be a SLO"):
        slo.max_rate_meeting_slo(lambda r: t, "fast", rate_lo_per_s=1, rate_hi_per_s=2)
    with pytest.raises(ValueError, match="arrival_s must be a finite number"):
        RequestTimeline("x", 10**400, None, None, 0, outcome="rejected")
    with pytest.raises(ValueError, match="max_evals must be an integer <= 200"):
        slo.max_rate_meeting_slo(lambda r: t, SLO(ttft_s=1), rate_lo_per_s=1, rate_hi_per_s=2,
                                 max_evals=10**6)
