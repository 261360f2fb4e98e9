"""vidya_lab.toyserver: hand-derived timelines, conservation, and M/D/1 as a cross-check."""

from __future__ import annotations

import numpy as np
import pytest

from vidya_lab import slo, toyserver, workload
from vidya_lab.toyserver import ToyServer


def one_workload(arrivals, prompts, outs):
    return workload.Workload.from_arrays(arrivals, prompts, outs)


def test_single_request_hand_values():
    server = ToyServer(max_batch=4, step_base_s=0.02, step_per_seq_s=0.001, prefill_s_per_token=1e-4)
    t = toyserver.simulate(one_workload([1.0], [1000], [4]), server, record_token_times=True)
    r = t[0]
    # idle server: the step starts at arrival; 0.02 + 0.001 + 1000 * 1e-4 = 0.121 s
    assert r.admitted_s == pytest.approx(1.0)
    assert r.first_token_s == pytest.approx(1.121)
    # three decode steps of 0.021 s
    assert r.finish_s == pytest.approx(1.121 + 3 * 0.021)
    assert r.token_times_s == pytest.approx((1.121, 1.142, 1.163, 1.184))
    assert slo.tpot_s(t)[0] == pytest.approx(0.021)


def test_full_batch_queues_fifo_and_arrivals_wait_for_the_step_boundary():
    server = ToyServer(max_batch=1, step_base_s=0.1, step_per_seq_s=0.0, prefill_s_per_token=0.0)
    t = toyserver.simulate(one_workload([0.0, 0.0, 0.05], [10, 10, 10], [3, 2, 1]), server)
    # request 0: steps ending 0.1, 0.2, 0.3; request 1 admitted at 0.3: 0.4, 0.5; request 2 at 0.5
    assert t.admitted_s == pytest.approx([0.0, 0.3, 0.5])
    assert t.first_token_s == pytest.approx([0.1, 0.4, 0.6])
    assert t.finish_s == pytest.approx([0.3, 0.5, 0.6])
    batch2 = ToyServer(max_batch=2, step_base_s=0.1, step_per_seq_s=0.0, prefill_s_per_token=0.0)
    t2 = toyserver.simulate(one_workload([0.0, 0.05], [10, 10], [3, 1]), batch2)
    assert t2.admitted_s == pytest.approx([0.0, 0.1])  # joins the running batch at the boundary
    assert t2.finish_s == pytest.approx([0.3, 0.2])


def test_every_request_is_accounted_for_under_overload():
    arrivals = workload.poisson_arrivals(20.0, 60.0, seed=3)
    w = workload.make_workload(arrivals, prompt_tokens=workload.LognormalLength(800, 500),
                               output_tokens=workload.LognormalLength(200, 120), seed=4)
    server = ToyServer(max_batch=8, max_queue=30, queue_timeout_s=2.0)
    t = toyserver.simulate(w, server)
    c = t.counts()
    assert c["finished"] + c["rejected"] + c["timed_out"] == len(w) == c["count"]
    assert c["rejected"] > 0 and c["timed_out"] > 0 and c["finished"] > 0
    assert np.all(np.isnan(t.first_token_s[~t.finished]))
    waited = t.outcome == 2
    assert t.finish_s[waited] - t.arrival_s[waited] == pytest.approx(np.full(waited.sum(), 2.0))
    assert np.all(slo.queue_wait_s(t) <= 2.0 + server.step_s(8, 10**6))
    assert np.all(t.output_tokens[t.finished] == w.output_tokens[t.finished])


def test_one_slot_one_token_is_an_md1_queue():
    # max_batch 1, one output token, no prefill cost: deterministic service D = 1 s, FIFO, Poisson
    # arrivals. Pollaczek-Khinchine: mean wait = rho * D / (2 (1 - rho)) = 0.75 s at rho = 0.6.
    d, lam = 1.0, 0.6
    arrivals = workload.poisson_arrivals(lam, 200_000.0, seed=11)
    w = workload.make_workload(arrivals, prompt_tokens=workload.FixedLength(0),
                               output_tokens=workload.FixedLength(1), seed=0)
    server = ToyServer(max_batch=1, step_base_s=d, step_per_seq_s=0.0, prefill_s_per_token=0.0)
    t = toyserver.simulate(w, server)
    assert slo.queue_wait_s(t).mean() == pytest.approx(lam * d / (2 * (1 - lam)), rel=0.05)
    assert slo.ttft_s(t).mean() == pytest.approx(0.75 + d, rel=0.03)


def test_tails_grow_with_load_and_token_gaps_are_step_times():
    def trace(rate):
        a = workload.poisson_arrivals(rate, 300.0, seed=2)
        w = workload.make_workload(a, prompt_tokens=workload.LognormalLength(3550, 3450),
                                   output_tokens=workload.LognormalLength(350, 250), seed=3)
        return toyserver.simulate(w, ToyServer(), record_token_times=True)

    low, high = trace(0.5), trace(1.5)
    assert slo.percentile(slo.ttft_s(high), 99) > slo.percentile(slo.ttft_s(low), 99)
    assert np.nanmedian(slo.tpot_s(high)) > np.nanmedian(slo.tpot_s(low))  # fuller batches
    itl = slo.itl_s(low)
    server = ToyServer()
    assert itl.min() >= server.step_s(1) - 1e-12
    assert itl.max() <= server.step_s(server.max_batch, 10**6)


def test_bad_inputs():
    with pytest.raises(ValueError, match="max_batch must be an integer >= 1"):
        ToyServer(max_batch=0)
    with pytest.raises(TypeError, match="Workload"):
        toyserver.simulate([1, 2], ToyServer())
    with pytest.raises(ValueError, match="output_tokens >= 1"):
        toyserver.simulate(one_workload([0.0], [10], [0]), ToyServer())


def test_flags_types_and_sizes_are_checked_by_name(monkeypatch):
    w = one_workload([0.0], [10], [3])
    with pytest.raises(TypeError, match="record_token_times must be True or False"):
        toyserver.simulate(w, ToyServer(), record_token_times="yes")
    with pytest.raises(TypeError, match="server must be a ToyServer"):
        toyserver.simulate(w, {"max_batch": 4})
    with pytest.raises(TypeError, match="max_batch must be an integer"):
        ToyServer(max_batch=True)
    monkeypatch.setattr(toyserver, "MAX_OUTPUT_TOKENS", 2)
    with pytest.raises(ValueError, match="output tokens; the limit is 2"):
        toyserver.simulate(w, ToyServer())
