"""The fast engine against the step-by-step reference: the same run, bit for bit, for every scheduler.

The engine advances a run of decode-only steps in one go and caches step times by batch shape
(:meth:`vidya_lab.admission.engine.Engine.decode_run`); ``tests/admission_reference.py`` keeps the
engine as it was before (one simpy event and one cost-model call per step). Both run the same
checked workload on a replica with a pinned :class:`~vidya_lab.sizing.Calibration` (so a refit
of ``vidya_lab/data/calibration.json`` changes neither side), and every output must be identical:
timelines, per-token emit times, reject reasons, ids in flight, the whole iteration log, the
preemption count, the end time and the free blocks. Tolerance: none (``==`` on every float).
"""

from __future__ import annotations

import numpy as np
import pytest
from admission_reference import reference_simulate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vidya_lab import admission as ad
from vidya_lab import sizing
from vidya_lab.workload import LognormalLength

#: Pinned, so the equivalence does not move with the fitted calibration (values of the fitted
#: kind, not the fit: efficiencies below 1 and every fixed cost non-zero, so each term counts).
CAL = sizing.Calibration(compute_efficiency_16bit=0.62, compute_efficiency_8bit=0.55,
                         memory_efficiency=0.83, step_overhead_s=0.004, layer_overhead_s=2e-5,
                         sequence_overhead_s=1.5e-4, memory_ceiling="achievable",
                         name="pinned for tests/test_admission_fast.py")
#: The issue's Vidur workload replica (few KV blocks: the head of the line is often blocked).
A100 = sizing.Replica("llama-2-70b", "a100-80gb", tp=2, calibration=CAL)
#: A small KV pool, so decode runs end in preemptions.
SMALL = sizing.Replica("llama-3.1-70b", "h100-sxm", tp=4, memory_fraction=0.6, calibration=CAL)


def _both(replica, w, cfg, *, duration_s=None, drain=True, service_time_s=None):
    fast = ad.simulate(replica, w, cfg, duration_s=duration_s, drain=drain,
                       service_time_s=service_time_s)
    horizon = (w.duration_s + 1.0 if len(w) else 0.0) if duration_s is None else duration_s
    rows = w if duration_s is None else w[w.arrival_s < horizon]
    service = None if service_time_s is None else list(service_time_s[:len(rows)])
    ref = reference_simulate(replica, rows, cfg, horizon, drain, service)
    return fast, ref


def _same(fast, ref) -> None:
    """Every output of the two runs is identical (NaN equal to NaN)."""
    a, b = fast.timelines, ref.timelines
    for name in ("request_id", "arrival_s", "admitted_s", "first_token_s", "finish_s",
                 "output_tokens", "outcome", "klass", "token_times_s", "token_offsets"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    assert np.array_equal(fast.reject_reason, ref.reject_reason)
    assert np.array_equal(fast.in_flight_ids, ref.in_flight_ids)
    for name in ("start_s", "duration_s", "batch_size", "prefill_tokens", "prefill_seqs",
                 "decode_count", "kv_blocks_used", "waiting", "chunk_offsets", "chunk_request",
                 "chunk_tokens"):
        x, y = getattr(fast.iterations, name), getattr(ref.iterations, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert (fast.arrived, fast.preemptions, fast.end_s, fast.kv_blocks_free_end) \
        == (ref.arrived, ref.preemptions, ref.end_s, ref.kv_blocks_free_end)
    s, r = fast.summary(), ref.summary()
    s.pop("wall_s"), r.pop("wall_s")
    assert s == r


#: label -> (replica, workload, config, simulate keywords): every policy, both KV rules, admission
#: control of each kind, partial prefills, priority with and without aging, a stop without drain.
def _cases():
    vidur = ad.poisson_workload(0.36, 1500.0, seed=0, prompt_tokens=3000, output_tokens=256)
    mixed = ad.upload_workload(2.0, 60.0, seed=3, upload_at_s=10.0, upload_tokens=20_000,
                               prompt_tokens=LognormalLength(1500, 1000, max_tokens=8000),
                               output_tokens=LognormalLength(200, 150, max_tokens=900))
    heavy = ad.poisson_workload(3.0, 60.0, seed=2, prompt_tokens=2000, output_tokens=600)
    c = ad.SchedulerConfig
    return {
        "fcfs, the Vidur workload": (A100, vidur, c(policy="fcfs"), {}),
        "chunked 512, the Vidur workload": (A100, vidur, c(policy="chunked", chunk_tokens=512), {}),
        "chunked, preemptions": (SMALL, heavy, c(policy="chunked"), {}),
        "fcfs, preemptions": (SMALL, heavy, c(policy="fcfs"), {}),
        "chunked, reserve": (SMALL, heavy, c(policy="chunked", kv_policy="reserve"), {}),
        "partial prefills": (SMALL, mixed, c(policy="chunked", chunk_tokens=2048,
                                             max_num_partial_prefills=4), {}),
        "priority, strict": (SMALL, mixed, c(policy="priority", chunk_tokens=1024), {}),
        "priority, aging": (SMALL, mixed, c(policy="priority", chunk_tokens=1024, aging_s=2.0),
                            {}),
        "admission control": (SMALL, mixed, c(policy="chunked", max_queue=6,
                                              max_tokens_in_flight=60_000,
                                              queue_deadline_s=4.0), {}),
        "fcfs, deadline": (SMALL, heavy, c(policy="fcfs", queue_deadline_s=3.0), {}),
        "stop at 30 s, no drain": (SMALL, heavy, c(policy="chunked"),
                                   {"duration_s": 30.0, "drain": False}),
        "batch of 3": (A100, mixed, c(policy="chunked", max_batch=3), {}),
    }


CASES = _cases()


@pytest.mark.parametrize("label", list(CASES))
def test_fast_engine_is_the_reference_bit_for_bit(label):
    replica, w, cfg, kw = CASES[label]
    fast, ref = _both(replica, w, cfg, **kw)
    _same(fast, ref)
    assert len(fast.iterations) > 50          # a run long enough for decode runs to matter
    # the fast path was taken: most decode-only steps never asked the cost model
    decode_only = int(np.count_nonzero(fast.iterations.prefill_seqs == 0))
    assert decode_only > 0


def test_queueing_mode_is_the_reference_bit_for_bit():
    w = ad.poisson_workload(0.5, 400.0, seed=5, prompt_tokens=8, output_tokens=1)
    service = np.random.default_rng(5).exponential(1.0, len(w))
    fast, ref = _both(A100, w, ad.SchedulerConfig(policy="fcfs", max_batch=1),
                      service_time_s=service)
    _same(fast, ref)


def test_decode_runs_ask_the_cost_model_once_per_batch_shape(monkeypatch):
    """The cache by batch shape: on the Vidur workload most decode steps repeat a shape (a count
    and a context sum) seen before, so the cost model is asked far fewer times than there are
    steps, and every answer it gave is the one the step was charged."""
    calls = []
    real = sizing.Replica.step_time_s

    def counting(self, *args):
        calls.append(args)
        return real(self, *args)

    monkeypatch.setattr(sizing.Replica, "step_time_s", counting)
    w = ad.poisson_workload(0.36, 1500.0, seed=0, prompt_tokens=3000, output_tokens=256)
    res = ad.simulate(A100, w, ad.SchedulerConfig(policy="fcfs"))
    assert len(calls) == len(set(calls))                 # never the same shape twice
    assert len(calls) < len(res.iterations) / 2
    monkeypatch.undo()
    for args in calls[:50]:
        assert real(A100, *args) in set(res.iterations.duration_s.tolist())


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy=st.sampled_from(ad.POLICIES), kv=st.sampled_from(ad.KV_POLICIES),
       rate=st.floats(0.5, 6.0), seed=st.integers(0, 10_000), drain=st.booleans(),
       max_queue=st.one_of(st.none(), st.integers(1, 20)),
       deadline=st.one_of(st.none(), st.floats(0.2, 5.0)),
       aging=st.one_of(st.none(), st.floats(0.5, 5.0)),
       chunk=st.integers(64, 4096), partial=st.sampled_from([1, 1, 2, 4]),
       batch=st.one_of(st.none(), st.integers(1, 12)))
def test_fast_engine_matches_the_reference_on_random_runs(policy, kv, rate, seed, drain, max_queue,
                                                          deadline, aging, chunk, partial, batch):
    w = ad.upload_workload(rate, 15.0, seed=seed, upload_at_s=4.0, upload_tokens=12_000,
                           output_tokens=LognormalLength(120, 80, max_tokens=500),
                           prompt_tokens=LognormalLength(1500, 1000, max_tokens=6000))
    cfg = ad.SchedulerConfig(policy=policy, kv_policy=kv, max_queue=max_queue,
                             queue_deadline_s=deadline, chunk_tokens=chunk,
                             aging_s=aging if policy == "priority" else None, max_batch=batch,
                             max_num_partial_prefills=partial if policy == "chunked" else 1)
    fast, ref = _both(SMALL, w, cfg, duration_s=15.0, drain=drain)
    _same(fast, ref)
