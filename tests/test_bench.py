"""Benchmarking a deployment (vidya_lab.bench): loads, precision, sweeps and staging, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from vidya_lab import bench, slo
from vidya_lab.bench import staging as st
from vidya_lab.toyserver import ToyServer, simulate

# A server whose every step lasts 0.1 s whatever the batch or prefill: timelines by hand.
FLAT = ToyServer(max_batch=2, step_base_s=0.1, step_per_seq_s=0.0, prefill_s_per_token=0.0)


def _in_system(t: slo.Timelines) -> int:
    """Most requests sent and not yet finished at any moment (a finish counts before a send)."""
    events = np.concatenate([t.arrival_s, t.finish_s])
    steps = np.concatenate([np.ones(len(t)), -np.ones(len(t))])
    order = np.lexsort((steps, events))
    return int(np.max(np.cumsum(steps[order])))


# --- closed loop -----------------------------------------------------------------------------

def test_one_user_closed_loop_by_hand():
    """One user, 0.1 s steps: request k finishes 0.1 × its tokens after it is sent, and the next
    is sent think_time_s later; nothing is sent at or after duration_s."""
    run = bench.closed_loop(1, 20.0, seed=3, server=FLAT, think_time_s=0.5)
    t, out = run.timelines, run.workload.output_tokens
    assert run.users == 1 and run.think_time_s == 0.5
    send = 0.0
    for k in range(len(t)):
        assert t.arrival_s[k] == pytest.approx(send)
        assert t.admitted_s[k] == pytest.approx(send)
        assert t.first_token_s[k] == pytest.approx(send + 0.1)
        assert t.finish_s[k] == pytest.approx(send + 0.1 * out[k])
        send = t.finish_s[k] + 0.5
    assert send >= 20.0  # the user's next send would fall outside the window
    assert np.all(t.arrival_s < 20.0)
    assert run.rate_per_s == pytest.approx(len(t) / 20.0)


@pytest.mark.parametrize("users", [1, 5, 40])
def test_closed_loop_never_holds_more_than_its_users(users):
    run = bench.closed_loop(users, 30.0, seed=users)
    t = run.timelines
    assert np.all(t.finished)  # a closed-loop user never gives up
    assert np.count_nonzero(t.arrival_s == 0.0) == users  # every user sends at 0 s
    assert _in_system(t) == users
    # waiting = in the system but not in the batch (32 by default)
    assert bench.max_waiting(t) == max(0, users - ToyServer().max_batch)


def test_closed_loop_is_an_open_loop_of_its_own_send_times():
    """The module docstring's claim: replaying the send times through simulate reproduces it."""
    run = bench.closed_loop(12, 40.0, seed=5)
    again = simulate(run.workload, ToyServer())
    for col in ("arrival_s", "admitted_s", "first_token_s", "finish_s"):
        np.testing.assert_allclose(getattr(again, col), getattr(run.timelines, col))


def test_more_users_offer_more_load():
    rates = [bench.closed_loop(k, 60.0, seed=2).rate_per_s for k in (1, 4, 16)]
    assert rates[0] < rates[1] < rates[2]


@pytest.mark.parametrize("kw, name, exc", [
    (dict(users=0), "users", ValueError), (dict(users=bench.loads.MAX_USERS + 1), "users",
                                           ValueError),
    (dict(users=2.5), "users", TypeError), (dict(duration_s=0.0), "duration_s", ValueError),
    (dict(think_time_s=-1.0), "think_time_s", ValueError),
    (dict(server="toy"), "server", TypeError),
    (dict(server=ToyServer(max_queue=4)), "max_queue", ValueError),
    (dict(server=ToyServer(queue_timeout_s=1.0)), "queue_timeout_s", ValueError),
    # more decode steps than MAX_STEPS at the toy's shortest step: refused before the first one
    (dict(duration_s=1.01 * bench.loads.MAX_STEPS * ToyServer().step_s(1, 0)), "duration_s",
     ValueError)])
def test_closed_loop_refuses_bad_input_by_name(kw, name, exc):
    args = {"users": 2, "duration_s": 10.0, "seed": 0, **kw}
    with pytest.raises(exc, match=name):
        bench.closed_loop(**args)


# --- open loop, replay, max_waiting, compare ---------------------------------------------------

def test_open_loop_is_simulate_of_the_tutor_workload():
    run = bench.open_loop(2.0, 30.0, seed=4)
    assert run.users is None and run.duration_s == 30.0
    assert run.rate_per_s == pytest.approx(len(run.workload) / 30.0)
    np.testing.assert_allclose(run.timelines.finish_s, simulate(run.workload, ToyServer()).finish_s)


def test_replay_sends_at_the_recorded_times():
    arrivals = [0.0, 0.0, 0.0, 1.0, 4.0]
    run = bench.replay(arrivals, seed=1, server=FLAT)
    np.testing.assert_allclose(run.timelines.arrival_s, arrivals)
    assert run.duration_s == 4.0 and run.rate_per_s == pytest.approx(5 / 4.0)
    # three at once on a batch of two: the third waits for a free slot
    assert bench.max_waiting(run.timelines) >= 1
    assert bench.replay(arrivals, seed=1, duration_s=10.0).rate_per_s == pytest.approx(0.5)


@pytest.mark.parametrize("arrivals, kw, match", [
    ([], {}, "at least one"), ([0.0, 0.0], {}, "duration_s"), ([0.0, 2.0], {"duration_s": 1.0},
                                                                "duration_s")])
def test_replay_refuses_an_empty_or_instant_trace(arrivals, kw, match):
    with pytest.raises(ValueError, match=match):
        bench.replay(arrivals, seed=0, **kw)


def _t(arrival, admitted):
    n = len(arrival)
    return slo.Timelines.from_arrays(arrival_s=arrival, admitted_s=admitted,
                                     first_token_s=np.asarray(admitted) + 0.1,
                                     finish_s=np.asarray(admitted) + 0.2, output_tokens=[2] * n)


def test_max_waiting_by_hand():
    # waiting: 1 at 0 s, 2 at 0.5 s, 3 at 1 s, 1 at 2 s, 0 at 3 s
    assert bench.max_waiting(_t([0.0, 0.5, 1.0], [2.0, 2.0, 3.0])) == 3
    # an admission at the very moment of an arrival counts first: never two waiting
    assert bench.max_waiting(_t([0.0, 1.0], [1.0, 2.0])) == 1
    assert bench.max_waiting(_t([0.0, 1.0], [0.0, 1.0])) == 0


def test_compare_open_closed_rows_are_their_runs():
    rows = bench.compare_open_closed((2, 40), 30.0, seed=3)
    assert [r["users"] for r in rows] == [2, 40]
    for r in rows:
        c, o = r["closed"], r["open"]
        assert r["rate_per_s"] == c.rate_per_s
        assert r["closed_p99_ttft_s"] == slo.percentile(slo.ttft_s(c.timelines), 99)
        assert r["open_p99_ttft_s"] == slo.percentile(slo.ttft_s(o.timelines), 99)
        assert r["closed_max_waiting"] == bench.max_waiting(c.timelines)
    assert rows[0]["closed_max_waiting"] == 0 and rows[1]["closed_max_waiting"] == 8


def test_compare_open_closed_bounds_all_its_loops_together():
    """Each loop alone is within MAX_STEPS; the three together are not, and the call says so
    before running any of them."""
    one = 0.4 * bench.loads.MAX_STEPS * ToyServer().step_s(1, 0)
    with pytest.raises(ValueError, match=r"3 closed loops \(users\) of duration_s = .* limit is 2e\+06"):
        bench.compare_open_closed((1, 2, 3), one, seed=0)


# --- precision -------------------------------------------------------------------------------

def test_duration_for_precision_by_hand():
    # 600 s × (0.1 / (0.05 × 1.0))² = 600 × 4 = 2400 s; halving the half-width wants 4× the run
    assert bench.duration_for_precision(600.0, 0.1, 1.0, 0.05) == pytest.approx(2400.0)
    assert bench.duration_for_precision(600.0, 0.1, 1.0, 0.025) == pytest.approx(9600.0)
    assert bench.duration_for_precision(600.0, 0.0, 1.0, 0.05) == 0.0


def test_assured_duration_pads_by_the_chi_square_factor():
    # ten batches, 90 % assurance: (b - 1) / chi2_{0.10, 9} = 9 / 4.16816 = 2.1592
    plain = bench.duration_for_precision(600.0, 0.1, 1.0, 0.05)
    assured = bench.duration_for_precision(600.0, 0.1, 1.0, 0.05, batches=10, assurance=0.9)
    assert assured / plain == pytest.approx(9 / 4.16816, rel=1e-5)
    # more assurance, or fewer batches to estimate the spread from, ask for a longer run
    assert bench.duration_for_precision(600.0, 0.1, 1.0, 0.05, batches=10, assurance=0.99) > assured
    assert bench.duration_for_precision(600.0, 0.1, 1.0, 0.05, batches=30, assurance=0.9) < assured
    with pytest.raises(ValueError, match="batches"):
        bench.duration_for_precision(600.0, 0.1, 1.0, 0.05, batches=4)
    with pytest.raises(ValueError, match="assurance"):
        bench.duration_for_precision(600.0, 0.1, 1.0, 0.05, batches=10, assurance=1.0)


def test_assured_duration_is_long_enough_in_the_stated_share_of_pilots():
    """Pilots whose b batch statistics are normal with spread sigma: the half-width each pilot
    reports is t * s / sqrt(b); the run it asks for reaches the wanted half-width (at the true
    sigma) in about `assurance` of pilots, and the unpadded rule in about 44 % (P(chi2_9 > 9))."""
    rng = np.random.default_rng(7)
    b, sigma, wanted, pilot_s = 10, 0.05, 0.02, 3600.0
    t = slo.student_t_quantile(0.975, b - 1)
    s = rng.normal(0.0, sigma, size=(20_000, b)).std(axis=1, ddof=1)
    true_hw_at = lambda length: t * sigma / np.sqrt(b) * np.sqrt(pilot_s / length)  # noqa: E731
    for kwargs, share in (({"batches": b, "assurance": 0.9}, 0.9), ({}, 0.437)):
        lengths = np.array([bench.duration_for_precision(pilot_s, t * x / np.sqrt(b), 1.0, wanted,
                                                         **kwargs) for x in s[:4000]])
        assert np.mean(true_hw_at(lengths) <= wanted) == pytest.approx(share, abs=0.025)


@pytest.mark.parametrize("args, name", [
    ((0.0, 0.1, 1.0, 0.05), "pilot_duration_s"), ((600.0, -0.1, 1.0, 0.05), "half_width_s"),
    ((600.0, 0.1, 0.0, 0.05), "estimate_s"), ((600.0, 0.1, 1.0, 0.0), "rel_half_width"),
    ((600.0, 0.1, 1.0, 1.5), "rel_half_width")])
def test_duration_for_precision_refuses_by_name(args, name):
    with pytest.raises(ValueError, match=name):
        bench.duration_for_precision(*args)


def test_p99_over_runs_is_each_seeds_open_loop():
    got = bench.p99_over_runs(1.0, 60.0, [1, 2, 3])
    want = [slo.percentile(slo.ttft_s(bench.open_loop(1.0, 60.0, seed=s).timelines), 99)
            for s in (1, 2, 3)]
    np.testing.assert_allclose(got, want)
    assert np.all(bench.p99_over_runs(1.0, 60.0, [1, 2, 3], q=50.0) <= got)


@pytest.mark.parametrize("kw, name, exc", [
    (dict(seeds=[-1]), "seed", ValueError), (dict(q=101.0), "q", ValueError),
    (dict(server=3), "server", TypeError),
    (dict(seeds=range(bench.precision.MAX_RUNS + 1)), "runs", ValueError)])
def test_p99_over_runs_refuses_by_name(kw, name, exc):
    args = {"rate_per_s": 1.0, "duration_s": 10.0, "seeds": [0], **kw}
    with pytest.raises(exc, match=name):
        bench.p99_over_runs(**args)


def test_one_run_intervals_bracket_the_estimate_and_ignore_order():
    t = bench.open_loop(1.0, 600.0, seed=1).timelines
    iv = bench.one_run_intervals(t, n_boot=200)
    ttft = slo.ttft_s(t)
    assert iv.estimate == slo.percentile(ttft, 99) and iv.requests == ttft.size
    assert iv.bootstrap[0] <= iv.estimate <= iv.bootstrap[1]
    assert iv.batch_means.low <= iv.batch_means.estimate <= iv.batch_means.high
    assert iv.batch_means.batches == 10
    assert iv.bootstrap_half_width == pytest.approx((iv.bootstrap[1] - iv.bootstrap[0]) / 2)
    assert iv.batch_means_half_width == pytest.approx(
        (iv.batch_means.high - iv.batch_means.low) / 2)
    shuffled = t[np.random.default_rng(0).permutation(len(t))]
    assert bench.one_run_intervals(shuffled, n_boot=200) == iv  # sorted back into time order


def test_intervals_narrow_with_a_longer_run():
    short = bench.one_run_intervals(bench.open_loop(1.0, 600.0, seed=7).timelines, n_boot=200)
    long = bench.one_run_intervals(bench.open_loop(1.0, 9600.0, seed=7).timelines, n_boot=200)
    assert long.requests > 10 * short.requests
    assert long.bootstrap_half_width < short.bootstrap_half_width
    assert long.batch_means_half_width < short.batch_means_half_width


# --- sweeps ----------------------------------------------------------------------------------

def _fake_run(rate: float) -> slo.Timelines:
    """Ten requests; at rate r the k-th has TTFT k × r / 10 s (so ≤ 1 s for k ≤ 10 / r)."""
    k = np.arange(1, 11, dtype=float)
    return slo.Timelines.from_arrays(arrival_s=np.zeros(10), first_token_s=k * rate / 10,
                                     finish_s=k * rate / 10 + 1.0, output_tokens=[11] * 10)


def test_sweep_rows_by_hand():
    rows = bench.sweep(_fake_run, slo.SLO(ttft_s=1.0), [1, 2.0, 5.0])
    assert [r["rate_per_s"] for r in rows] == [1.0, 2.0, 5.0]
    assert [r["attainment"] for r in rows] == pytest.approx([1.0, 0.5, 0.2])
    assert rows[0]["p99_tpot_s"] == pytest.approx(0.1)  # 1 s over 10 gaps
    assert rows[1]["p99_ttft_s"] == pytest.approx(slo.percentile(np.arange(1, 11) * 0.2, 99))


def test_sweep_goodput_meets_the_slo_and_the_next_rate_does_not():
    target = slo.SLO(ttft_s=1.5)

    def run(rate):
        return bench.toy_trace(rate, 300.0, 1)

    g = slo.max_rate_meeting_slo(run, target, target_attainment=0.9, rate_lo_per_s=0.5,
                                 rate_hi_per_s=8.0, rel_tol=0.05)
    assert 0.5 <= g.rate_per_s < 8.0
    failing = min(r for r, a in g.evaluated if r > g.rate_per_s)  # the next rate tried above it
    rows = bench.sweep(run, target, [g.rate_per_s, failing])
    assert rows[0]["attainment"] == pytest.approx(g.attainment)
    assert rows[0]["attainment"] >= 0.9 > rows[1]["attainment"]
    assert rows[1]["p99_ttft_s"] > rows[0]["p99_ttft_s"]


def test_toy_trace_is_cached_and_validated():
    assert bench.toy_trace(1.0, 30.0, 1) is bench.toy_trace(1.0, 30.0, 1)
    assert len(bench.toy_trace(1.0, 30.0, 1)) != len(bench.toy_trace(3.0, 30.0, 1))
    with pytest.raises(ValueError, match="rate_per_s"):
        bench.toy_trace(0.0, 30.0, 1)
    with pytest.raises(ValueError, match="seed"):
        bench.toy_trace(1.0, 30.0, -1)


@pytest.mark.parametrize("args, name, exc", [
    (("not callable", slo.SLO(ttft_s=1.0), [1.0]), "run", TypeError),
    ((_fake_run, {"ttft_s": 1.0}, [1.0]), "target", TypeError),
    ((_fake_run, slo.SLO(ttft_s=1.0), [-1.0]), "rates", ValueError),
    ((_fake_run, slo.SLO(ttft_s=1.0), "fast"), "rates", TypeError)])
def test_sweep_refuses_by_name(args, name, exc):
    with pytest.raises(exc, match=name):
        bench.sweep(*args)


# --- staging ---------------------------------------------------------------------------------

def test_staging_workloads_are_the_docstrings():
    w = bench.staging_workloads(1)
    assert list(w) == ["light", "short", "long"]
    light = w["light"]
    assert len(light) == 40 and set(light.prompt_tokens) <= {64, 512, 2048, 6144}
    assert np.all(light.output_tokens == 24) and np.all(np.diff(light.arrival_s) > 0)
    for name, prompt in (("short", 128), ("long", 3000)):
        b = w[name]
        assert len(b) == 32 and np.all(b.arrival_s == 0) and np.all(b.prompt_tokens == prompt)
        assert b.output_tokens[0] == 8 and b.output_tokens[-1] == 160
    np.testing.assert_array_equal(bench.staging_workloads(1)["light"].arrival_s, light.arrival_s)
    assert not np.array_equal(bench.staging_workloads(2)["light"].arrival_s, light.arrival_s)


def test_staging_calibration_holds_the_hidden_truth():
    p = bench.staging_calibration().parameters()
    for name, value in bench.STAGING_TRUTH.items():
        assert p[name] == pytest.approx(value)
    r = bench.staging_replica()
    assert r.tp == st.STAGING_TP and r.calibration.request_overhead_s == pytest.approx(0.010)


def test_client_view_adds_the_front_end():
    t = simulate(bench.staging_workloads(1)["short"], FLAT, record_token_times=True)
    seen = st.client_view(t, 0.25)
    np.testing.assert_allclose(seen.first_token_s, t.first_token_s + 0.25)
    np.testing.assert_allclose(seen.finish_s, t.finish_s + 0.25)
    np.testing.assert_allclose(seen.arrival_s, t.arrival_s)
    jit = st.client_view(t, 0.25, 0.01)
    assert not np.allclose(jit.first_token_s, seen.first_token_s)
    with pytest.raises(ValueError, match="request_overhead_s"):
        st.client_view(t, -1.0)
    with pytest.raises(ValueError, match="jitter_s"):
        st.client_view(t, 0.0, -1.0)


def test_write_staging_runs_writes_three_files(tmp_path):
    paths = bench.write_staging_runs(tmp_path / "runs", "stream-log")
    assert [p.name for p in paths] == ["light.jsonl", "short.jsonl", "long.jsonl"]
    assert all(p.stat().st_size > 0 for p in paths)
    with pytest.raises(ValueError, match="fmt"):
        bench.write_staging_runs(tmp_path, "csv")
    with pytest.raises(ValueError, match="seed"):
        bench.write_staging_runs(tmp_path / "never", seed=-1)
    assert not (tmp_path / "never").exists()  # refused before anything is written
    with pytest.raises(TypeError, match="seed"):
        bench.staging_workloads(1.5)


def test_recovery_rows_by_hand():
    names = list(bench.STAGING_TRUTH)
    doc = {"published": {"parameters": {n: 1.0 for n in names}},
           "parameters": {n: 2.0 for n in names}, "pinned_by_data": [names[0]]}
    rows = bench.recovery_rows(doc)
    assert [r["parameter"] for r in rows] == names
    assert [r["true"] for r in rows] == list(bench.STAGING_TRUTH.values())
    assert all(r["published"] == 1.0 and r["fitted"] == 2.0 for r in rows)
    assert [r["pinned"] for r in rows] == [True] + [False] * (len(names) - 1)
