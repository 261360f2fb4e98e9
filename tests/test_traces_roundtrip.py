"""Writers: a simulated run written in each tool's format reads back with the same TTFT, TPOT,
end-to-end and (where the format keeps chunk times) ITL; what a format cannot hold is said."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import admission, sizing, slo, toyserver, traces
from vidya_lab.workload import Workload, poisson_arrivals

FORMATS = ("vllm", "genai-perf", "llmperf", "stream-log")
EXT = {"vllm": "json", "genai-perf": "json", "llmperf": "json", "stream-log": "jsonl"}
REPLICA = sizing.Replica("llama-3.1-70b", "h100-sxm", tp=4)


@pytest.fixture(scope="module")
def simulated():
    """A short overloaded run of the replica simulator: finished and rejected requests."""
    rng = np.random.default_rng(3)
    arrivals = poisson_arrivals(40.0, 3.0, seed=rng)
    n = arrivals.size
    w = Workload.from_arrays(arrivals, rng.integers(100, 2000, n), rng.integers(1, 200, n))
    res = admission.simulate(REPLICA, w, admission.SchedulerConfig(max_queue=20))
    t = res.timelines
    assert t.counts()["finished"] > 20 and t.counts()["rejected"] > 10
    return t, w.prompt_tokens[t.request_id]


def roundtrip(t, fmt, tmp_path, **kw):
    path = tmp_path / f"run.{EXT[fmt]}"
    traces.WRITERS[fmt](t, path, **kw)
    back = traces.read_trace(path)
    assert back.source_format == fmt
    return back


def assert_same_latencies(t, back, fmt, tol=1e-6):
    b = back.timelines
    assert len(b) == len(t)
    assert b.counts()["finished"] == t.counts()["finished"]
    fin = t.finished
    assert list(b.finished) == list(fin)
    assert slo.ttft_s(b) == pytest.approx(slo.ttft_s(t), abs=tol)
    assert slo.e2e_s(b) == pytest.approx(slo.e2e_s(t), abs=tol)
    assert np.array_equal(np.isnan(slo.tpot_s(b)), np.isnan(slo.tpot_s(t)))
    tp_t, tp_b = slo.tpot_s(t), slo.tpot_s(b)
    ok = ~np.isnan(tp_t)
    assert tp_b[ok] == pytest.approx(tp_t[ok], abs=tol)
    assert list(b.output_tokens[fin]) == list(t.output_tokens[fin])
    if fmt == "llmperf":
        with pytest.raises(ValueError, match="ITL cannot be computed"):
            back.itl_s()
    else:
        assert back.itl_s() == pytest.approx(slo.itl_s(t), abs=tol)


@pytest.mark.parametrize("fmt", FORMATS)
def test_simulated_run_round_trips(simulated, fmt, tmp_path):
    t, prompts = simulated
    back = roundtrip(t, fmt, tmp_path, prompt_tokens=prompts)
    assert_same_latencies(t, back, fmt)
    if fmt == "genai-perf":  # the prompt count rides on the usage chunk: none for a failure
        fin = t.finished
        assert list(back.prompt_tokens[fin]) == list(prompts[fin])
        assert np.all(back.prompt_tokens[~fin] == -1)
    else:
        assert list(back.prompt_tokens) == list(prompts)
    rejected = t.counts()["rejected"]
    assert back.timelines.counts()["rejected"] == rejected
    if fmt == "llmperf":  # LLMPerf keeps no send times
        assert not back.arrivals_known and np.all(back.timelines.arrival_s == 0)
    else:
        assert back.arrivals_known
        assert back.timelines.arrival_s == pytest.approx(t.arrival_s - t.arrival_s.min(), abs=1e-6)
    if fmt in ("vllm", "stream-log"):  # one token per step here: per-token times survive
        assert back.timelines.token_times_s is not None


def test_writers_keep_settings_and_leave_unknown_prompts_out(simulated, tmp_path):
    t, _ = simulated
    meta = {"model": "llama-3.1-70b", "concurrency": 16, "request_rate_per_s": 40.0}
    v = roundtrip(t, "vllm", tmp_path, metadata=meta)
    assert v.metadata["model"] == "llama-3.1-70b" and v.metadata["concurrency"] == 16
    assert v.metadata["request_rate_per_s"] == 40.0 and np.all(v.prompt_tokens == -1)
    assert "input_lens" not in json.loads((tmp_path / "run.json").read_text())
    g = roundtrip(t, "genai-perf", tmp_path, metadata=meta)
    assert g.metadata["concurrency"] == 16 and g.metadata["model"] == "llama-3.1-70b"
    assert np.all(g.prompt_tokens == -1)
    s = roundtrip(t, "stream-log", tmp_path, metadata=meta)
    assert s.metadata["concurrency"] == 16 and s.metadata["model"] == "llama-3.1-70b"
    assert np.all(roundtrip(t, "llmperf", tmp_path).prompt_tokens == -1)


def test_vllm_writer_aggregates_match_vllms_formulas(simulated, tmp_path):
    t, prompts = simulated
    path = tmp_path / "r.json"
    traces.write_vllm(t, path, prompt_tokens=prompts)
    doc = json.loads(path.read_text())
    fin = t.finished
    assert doc["completed"] == int(fin.sum()) and doc["failed"] == int((~fin).sum())
    assert doc["total_output_tokens"] == int(t.output_tokens[fin].sum())
    assert doc["mean_ttft_ms"] == pytest.approx(1000 * float(np.mean(slo.ttft_s(t))))
    tp = slo.tpot_s(t)
    assert doc["median_tpot_ms"] == pytest.approx(1000 * float(np.median(tp[~np.isnan(tp)])))
    assert doc["p99_itl_ms"] == pytest.approx(1000 * float(np.percentile(slo.itl_s(t), 99)))
    assert set(doc["errors"]) == {"", "rejected (vidya-lab simulation)"}


def test_toyserver_run_with_every_outcome_round_trips(tmp_path):
    rng = np.random.default_rng(5)
    arrivals = poisson_arrivals(12.0, 20.0, seed=rng)
    n = arrivals.size
    w = Workload.from_arrays(arrivals, np.full(n, 200), rng.integers(1, 60, n))
    server = toyserver.ToyServer(max_batch=4, max_queue=10, queue_timeout_s=1.0)
    t = toyserver.simulate(w, server, record_token_times=True)
    counts = t.counts()
    assert min(counts["finished"], counts["rejected"], counts["timed_out"]) > 0, counts
    for fmt in FORMATS:
        back = roundtrip(t, fmt, tmp_path)
        assert_same_latencies(t, back, fmt)
        failed = back.timelines.counts()
        if fmt == "genai-perf":  # a failed request has no responses: why it failed is lost
            assert failed["rejected"] == counts["rejected"] + counts["timed_out"]
        else:  # the error text says which
            assert failed == counts, fmt


def test_writers_that_stream_need_token_times(tmp_path):
    t = slo.Timelines.from_arrays(arrival_s=[0.0, 1.0], first_token_s=[0.5, 1.2],
                                  finish_s=[1.0, 2.0], output_tokens=[3, 5])
    for fmt in ("vllm", "genai-perf", "stream-log"):
        with pytest.raises(ValueError, match="needs per-token emit times"):
            traces.WRITERS[fmt](t, tmp_path / "x.json")
    back = roundtrip(t, "llmperf", tmp_path)  # LLMPerf keeps per-request totals only
    assert slo.tpot_s(back.timelines) == pytest.approx([0.25, 0.2])
    with pytest.raises(TypeError, match="Timelines or a traces.Trace"):
        traces.write_vllm([1, 2], tmp_path / "x.json")
    with pytest.raises(ValueError, match="is a directory"):
        traces.write_llmperf(t, tmp_path)
    with pytest.raises(ValueError, match="one entry per request"):
        traces.write_llmperf(t, tmp_path / "y.json", prompt_tokens=[1, 2, 3])


def test_a_read_trace_can_be_rewritten_in_another_format(tmp_path):
    data = Path(__file__).parent / "data"
    log = traces.read_trace(data / "stream_log" / "tutor_stream.jsonl")
    traces.write_vllm(log, tmp_path / "as_vllm.json")
    back = traces.read_trace(tmp_path / "as_vllm.json")
    assert back.timelines.counts() == log.timelines.counts()  # timed out stays timed out
    assert np.all(back.prompt_tokens == -1)  # some prompts unknown: input_lens left out
    assert_same_latencies(log.timelines, back, "vllm")
    vllm = traces.read_trace(data / "vllm_bench" / "serve_detailed.json")
    traces.write_stream_log(vllm, tmp_path / "as_log.jsonl")
    again = traces.read_trace(tmp_path / "as_log.jsonl")
    assert list(again.prompt_tokens) == list(vllm.prompt_tokens)  # all known: carried over
    assert_same_latencies(vllm.timelines, again, "stream-log")


# ----------------------------------------------------------------------------- property

@st.composite
def timelines(draw):
    """Random consistent timelines, some with several tokens per emission, some not finished."""
    n = draw(st.integers(1, 6))
    a, f, c, k, oc, tt = [], [], [], [], [], []
    for _ in range(n):
        arrival = draw(st.floats(0, 100, allow_nan=False))
        outcome = draw(st.sampled_from(["finished", "finished", "rejected", "timed_out"]))
        if outcome != "finished":
            a.append(arrival), f.append(np.nan), c.append(np.nan), k.append(0), oc.append(outcome)
            tt.append(())
            continue
        gaps = draw(st.lists(st.floats(0.001, 2.0), min_size=1, max_size=8))
        per = draw(st.lists(st.integers(1, 3), min_size=len(gaps), max_size=len(gaps)))
        times = np.repeat(arrival + np.cumsum(gaps), per)
        a.append(arrival), f.append(times[0]), c.append(times[-1]), k.append(times.size)
        oc.append(outcome), tt.append(times)
    return slo.Timelines.from_arrays(arrival_s=a, first_token_s=f, finish_s=c,
                                     output_tokens=np.asarray(k), outcome=oc, token_times_s=tt)


@settings(max_examples=40, deadline=None)
@given(t=timelines(), fmt=st.sampled_from(FORMATS))
def test_any_timelines_round_trip(tmp_path_factory, t, fmt):
    back = roundtrip(t, fmt, tmp_path_factory.mktemp("rt"))
    assert_same_latencies(t, back, fmt)
    if fmt == "stream-log":  # the stream log keeps every outcome and every token's time
        assert list(back.timelines.outcome) == list(t.outcome)
        assert back.timelines.token_times_s == pytest.approx(t.token_times_s - t.arrival_s.min())
