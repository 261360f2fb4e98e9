"""The replica simulator: theory (M/M/1, M/D/1), the cost model step by step, invariants, policies."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vidya_lab import admission as ad
from vidya_lab import queueing, sizing, slo
from vidya_lab.slo import Timelines
from vidya_lab.workload import LognormalLength, Workload, poisson_arrivals

R70 = sizing.Replica("llama-3.3-70b", "h100-sxm", tp=4)
#: A deliberately small KV pool (a few thousand blocks) so preemption happens in short runs.
SMALL = sizing.Replica("llama-3.1-70b", "h100-sxm", tp=4, memory_fraction=0.6)


def _validate(res):
    """Rebuild the timelines through slo's validating constructor: every token time consistent."""
    t = res.timelines
    seqs = [t.token_times_s[t.token_offsets[i]:t.token_offsets[i + 1]] for i in range(len(t))]
    Timelines.from_arrays(arrival_s=t.arrival_s, first_token_s=t.first_token_s,
                          finish_s=t.finish_s, output_tokens=t.output_tokens,
                          admitted_s=t.admitted_s, outcome=t.outcome, request_id=t.request_id,
                          token_times_s=seqs)


# ----------------------------------------------------------------------------- theory

def _single_server_waits(service, lam, n_target, seed):
    rng = np.random.default_rng(seed)
    arr = poisson_arrivals(lam, n_target / lam, seed=rng)
    n = arr.size
    w = Workload.from_arrays(arr, np.full(n, 8), np.ones(n, dtype=int))
    st_s = service(rng, n)
    res = ad.simulate(R70, w, ad.SchedulerConfig(policy="fcfs", max_batch=1), service_time_s=st_s)
    assert res.finished == n
    t = res.timelines
    return t.admitted_s - t.arrival_s


@pytest.mark.parametrize("kind", ["M/M/1", "M/D/1"])
def test_single_server_mode_reproduces_queueing_theory(kind):
    lam, mean_s = 0.5, 1.0   # ρ = 0.5
    if kind == "M/M/1":
        waits = _single_server_waits(lambda rng, n: rng.exponential(mean_s, n), lam, 20000, 7)
        theory = queueing.mm1_mean_wait_s(lam, 1 / mean_s)     # 1.0 s
    else:
        waits = _single_server_waits(lambda rng, n: np.full(n, mean_s), lam, 20000, 7)
        theory = queueing.md1_mean_wait_s(lam, mean_s)         # 0.5 s
    ci = slo.batch_means_ci(waits, batches=20)   # consecutive waits are correlated
    se = ci.standard_error
    assert abs(ci.estimate - theory) < 4 * se, (ci.estimate, theory, se)
    assert se < 0.1 * theory        # the run is long enough for the check to mean something


def test_service_mode_is_checked():
    w = Workload.from_arrays([0.0, 1.0], [8, 8], [1, 2])
    with pytest.raises(ValueError, match="output_tokens == 1"):
        ad.simulate(R70, w, ad.SchedulerConfig(policy="fcfs"), service_time_s=[1.0, 1.0])
    w1 = Workload.from_arrays([0.0, 1.0], [8, 8], [1, 1])
    with pytest.raises(ValueError, match="policy 'fcfs'"):
        ad.simulate(R70, w1, ad.SchedulerConfig(policy="chunked"), service_time_s=[1.0, 1.0])
    with pytest.raises(ValueError, match="one time per workload request"):
        ad.simulate(R70, w1, ad.SchedulerConfig(policy="fcfs"), service_time_s=[1.0])


# ----------------------------------------------------------------------------- the cost model, step by step

def test_one_request_follows_the_cost_model_exactly():
    p, m = 1000, 5
    w = Workload.from_arrays([0.0], [p], [m])
    res = ad.simulate(R70, w, ad.SchedulerConfig(policy="fcfs"))
    t = res.timelines
    times = t.token_times_s
    assert times.size == m
    assert times[0] == pytest.approx(sizing.iteration_time_s(R70, prefill=[(p, 0)]))
    assert times[0] == pytest.approx(sizing.prefill_time_s(R70, p))
    for j in range(1, m):   # the j-th decode attends to the prompt plus j generated tokens
        gap = sizing.iteration_time_s(R70, decode_contexts=[p + j])
        assert times[j] - times[j - 1] == pytest.approx(gap)
    assert t.admitted_s[0] == 0.0 and t.finish_s[0] == times[-1]
    assert list(res.iterations.prefill_tokens) == [p, 0, 0, 0, 0]
    assert list(res.iterations.decode_count) == [0, 1, 1, 1, 1]


def test_chunked_prefill_splits_a_prompt_into_budget_sized_steps():
    p, c = 5000, 2048
    w = Workload.from_arrays([0.0], [p], [2])
    res = ad.simulate(R70, w, ad.SchedulerConfig(policy="chunked", chunk_tokens=c))
    log = res.iterations
    assert list(log.prefill_tokens) == [2048, 2048, 904, 0]
    want = [sizing.iteration_time_s(R70, prefill=[(2048, 0)]),
            sizing.iteration_time_s(R70, prefill=[(2048, 2048)]),
            sizing.iteration_time_s(R70, prefill=[(904, 4096)]),
            sizing.iteration_time_s(R70, decode_contexts=[p + 1])]
    assert log.duration_s == pytest.approx(want)
    # chunking costs time: three chunks take longer than one whole-prompt step
    assert sum(want[:3]) > sizing.iteration_time_s(R70, prefill=[(p, 0)])


# ----------------------------------------------------------------------------- the freeze and its cures

def _upload_run(policy, **kw):
    w = ad.upload_workload(1.0, 60.0, seed=4, upload_at_s=20.0, output_tokens=200)
    return ad.simulate(R70, w, ad.SchedulerConfig(policy=policy, **kw))


def test_fcfs_freezes_everyone_for_the_whole_upload_prefill():
    res = _upload_run("fcfs")
    freeze = sizing.prefill_time_s(R70, ad.TANVI.upload_tokens)
    emit, gaps = ad.itl_timeline(res)
    assert gaps.max() >= freeze                        # some student waited the whole prefill
    # ... and that gap spans the upload's own prefill step
    up = res.timelines[res.timelines.klass == ad.UPLOAD]
    f_up = up.first_token_s[0]
    step = sizing.iteration_time_s(R70, prefill=[(ad.TANVI.upload_tokens, 0)])
    j = np.argmax(gaps)
    assert emit[j] - gaps[j] <= f_up - step + 1e-9 and emit[j] >= f_up


def test_chunked_prefill_keeps_students_streaming_through_the_upload():
    fcfs, chunked = _upload_run("fcfs"), _upload_run("chunked", chunk_tokens=512)
    freeze = sizing.prefill_time_s(R70, ad.TANVI.upload_tokens)
    _, g_chunked = ad.itl_timeline(chunked)
    assert g_chunked.max() < freeze / 10
    up = lambda r: r.timelines[r.timelines.klass == ad.UPLOAD]  # noqa: E731
    # the price: the upload itself takes longer to its first token
    assert (up(chunked).first_token_s[0] - 20.0) > (up(fcfs).first_token_s[0] - 20.0)


def test_strict_priority_starves_the_upload_and_aging_rescues_it():
    # students keep the prefill budget busy; the upload (rank 1) waits behind every one of them
    w = ad.upload_workload(3.0, 40.0, seed=5, upload_at_s=1.0, output_tokens=20)
    strict = ad.simulate(R70, w, ad.SchedulerConfig(policy="priority", chunk_tokens=512))
    aged = ad.simulate(R70, w, ad.SchedulerConfig(policy="priority", chunk_tokens=512, aging_s=2.0))
    fifo = ad.simulate(R70, w, ad.SchedulerConfig(policy="chunked", chunk_tokens=512))

    def up_ttft(r):
        t = r.timelines[r.timelines.klass == ad.UPLOAD]
        return float(t.first_token_s[0] - t.arrival_s[0])
    assert up_ttft(strict) > up_ttft(aged) >= up_ttft(fifo) * 0.5
    # while starved it never got a token: its first token came after the students' arrivals thinned
    assert up_ttft(strict) > 10.0


# ----------------------------------------------------------------------------- admission control

def test_queue_cap_rejects_at_arrival_with_a_reason():
    w = Workload.from_arrays(np.zeros(6), np.full(6, 100), np.full(6, 3))
    res = ad.simulate(R70, w, ad.SchedulerConfig(policy="fcfs", max_queue=4))
    c = res.counts()
    assert c == {**c, "arrived": 6, "finished": 4, "rejected": 2, "in_flight": 0,
                 "rejected_queue_full": 2}
    t = res.timelines
    rej = t.outcome == 1
    assert np.all(t.finish_s[rej] == t.arrival_s[rej])
    assert set(res.reject_reason[rej]) == {"queue_full"}
    assert np.all(np.isnan(t.first_token_s[rej]))


def test_tokens_in_flight_cap_and_too_long():
    w = Workload.from_arrays([0.0, 0.0, 0.0], [1000, 1000, 10_000_000], [100, 100, 10])
    res = ad.simulate(R70, w, ad.SchedulerConfig(max_tokens_in_flight=1500))
    c = res.counts()
    assert (c["finished"], c["rejected_tokens_in_flight"], c["rejected_too_long"]) == (1, 1, 1)
    assert list(res.reject_reason) == ["", "tokens_in_flight", "too_long"]


def test_deadline_sheds_waiting_requests_at_their_deadline():
    # one slot: requests queue behind each other; those not admitted within 0.5 s are shed
    w = Workload.from_arrays(np.zeros(5), np.full(5, 500), np.full(5, 50))
    res = ad.simulate(R70, w, ad.SchedulerConfig(policy="fcfs", max_batch=1, queue_deadline_s=0.5))
    t = res.timelines
    shed = res.reject_reason == "deadline"
    assert shed.sum() == 4 and res.finished == 1
    assert t.finish_s[shed] == pytest.approx(t.arrival_s[shed] + 0.5)
    assert np.all(np.isnan(t.admitted_s[shed]))


# ----------------------------------------------------------------------------- memory

def test_preemption_recomputes_and_loses_nothing():
    w = ad.poisson_workload(3.0, 60.0, seed=2, prompt_tokens=2000, output_tokens=600)
    res = ad.simulate(SMALL, w, ad.SchedulerConfig(policy="chunked"))
    assert res.preemptions > 0
    assert res.finished == len(w)
    assert np.all(res.timelines.output_tokens == w.output_tokens)
    assert res.kv_blocks_free_end == res.kv_blocks_total
    assert res.iterations.kv_blocks_used.max() <= res.kv_blocks_total
    # recomputation shows as extra prefill work: more prompt tokens processed than were sent
    assert res.iterations.prefill_tokens.sum() > w.prompt_tokens.sum()
    _validate(res)
    reserve = ad.simulate(SMALL, w, ad.SchedulerConfig(policy="chunked", kv_policy="reserve"))
    assert reserve.preemptions == 0 and reserve.finished == len(w)
    assert reserve.iterations.prefill_tokens.sum() == w.prompt_tokens.sum()


@settings(max_examples=25, deadline=None)
@given(policy=st.sampled_from(ad.POLICIES), kv=st.sampled_from(ad.KV_POLICIES),
       rate=st.floats(0.5, 8.0), seed=st.integers(0, 10_000), drain=st.booleans(),
       max_queue=st.one_of(st.none(), st.integers(1, 20)),
       deadline=st.one_of(st.none(), st.floats(0.2, 5.0)),
       chunk=st.integers(64, 4096), partial=st.sampled_from([1, 1, 2, 4]))
def test_conservation_and_consistency(policy, kv, rate, seed, drain, max_queue, deadline, chunk,
                                      partial):
    w = ad.upload_workload(rate, 20.0, seed=seed, upload_at_s=5.0, upload_tokens=20_000,
                           output_tokens=LognormalLength(120, 80, max_tokens=600),
                           prompt_tokens=LognormalLength(1500, 1000, max_tokens=8000))
    partial = partial if policy == "chunked" else 1
    cfg = ad.SchedulerConfig(policy=policy, kv_policy=kv, max_queue=max_queue,
                             queue_deadline_s=deadline, chunk_tokens=chunk, aging_s=3.0,
                             max_num_partial_prefills=partial)
    res = ad.simulate(SMALL, w, cfg, duration_s=20.0, drain=drain)
    c = res.counts()
    assert c["arrived"] == len(w) == c["finished"] + c["rejected"] + c["in_flight"]
    assert c["rejected"] == sum(c[f"rejected_{r}"] for r in ad.REJECT_REASONS)
    if drain:
        assert c["in_flight"] == 0 and res.kv_blocks_free_end == res.kv_blocks_total
    fin = res.timelines.finished
    tok = np.diff(res.timelines.token_offsets)
    assert np.all(tok[fin] == res.timelines.output_tokens[fin])
    log = res.iterations
    assert np.all(log.kv_blocks_used <= res.kv_blocks_total)
    assert np.all(log.batch_size <= SMALL.max_num_seqs)
    if policy == "fcfs":      # whole prompts in prefill-only steps: decodes wait (the freeze)
        assert not np.any((log.prefill_tokens > 0) & (log.decode_count > 0))
    else:                     # the token budget holds: decodes first, prompt chunks in the rest
        assert np.all(log.prefill_tokens <= np.maximum(chunk - log.decode_count, 0))
    if partial > 1:           # at most that many prompts share a step
        assert np.all(log.prefill_seqs <= partial)
    _validate(res)


def test_class_priority_mapping_and_unknown_classes():
    cfg = ad.SchedulerConfig(policy="priority", class_priority={"bulk": 2, "vip": -1})
    assert cfg.class_priority == (("bulk", 2), ("vip", -1))
    assert cfg.rank_of("vip") == -1 and cfg.rank_of("student") == 0
    # a bulk job and a vip arrive while a student's long prompt is queued: vip first, bulk last
    w = Workload.from_arrays([0.0, 0.0, 0.0], [3000, 3000, 3000], [2, 2, 2],
                             klass=["bulk", "student", "vip"])
    res = ad.simulate(R70, w, ad.SchedulerConfig(policy="priority", chunk_tokens=1000,
                                                 class_priority={"bulk": 2, "vip": -1}))
    first = dict(zip(res.timelines.klass, res.timelines.first_token_s, strict=True))
    assert first["vip"] < first["student"] < first["bulk"]
    with pytest.raises(TypeError, match="class_priority"):
        ad.SchedulerConfig(class_priority=[("a", 1, 2)])


def test_same_seed_same_result():
    a = _upload_run("priority", aging_s=5.0)
    b = _upload_run("priority", aging_s=5.0)
    np.testing.assert_array_equal(a.timelines.token_times_s, b.timelines.token_times_s)
    np.testing.assert_array_equal(a.iterations.duration_s, b.iterations.duration_s)


def test_stop_at_duration_reports_in_flight():
    w = ad.poisson_workload(2.0, 30.0, seed=1)
    res = ad.simulate(R70, w, duration_s=30.0, drain=False)
    assert res.in_flight > 0
    assert res.arrived == res.finished + res.rejected + res.in_flight
    assert res.iterations.start_s.max() < 30.0
    s = res.summary()
    assert {"arrived", "finished", "rejected", "in_flight", "ttft_s", "tpot_s", "e2e_s", "itl_s",
            "wall_s"} <= set(s)
    assert set(s["itl_s"]) == {"p50", "p99", "max"}


def test_window_summary_and_itl_timeline():
    res = _upload_run("fcfs")
    before = ad.window_summary(res, 0.0, 20.0)
    during = ad.window_summary(res, 20.0, 30.0)
    assert during["itl_max_s"] > 4 * before["itl_max_s"]
    assert during["itl_max_s"] == pytest.approx(ad.itl_timeline(res)[1].max())
    emit, gaps = ad.itl_timeline(res, klass=None)
    assert np.all(np.diff(emit) >= 0) and np.all(gaps > 0)
    with pytest.raises(ValueError, match="end_s"):
        ad.window_summary(res, 5.0, 5.0)


def test_bad_input_is_named():
    w = Workload.from_arrays([0.0], [10], [0])
    with pytest.raises(ValueError, match="output_tokens >= 1"):
        ad.simulate(R70, w)
    with pytest.raises(ValueError, match="policy"):
        ad.SchedulerConfig(policy="lifo")
    with pytest.raises(ValueError, match="chunk_tokens"):
        ad.SchedulerConfig(chunk_tokens=0)
    with pytest.raises(ValueError, match="max_queue"):
        ad.SchedulerConfig(max_queue=0)
    with pytest.raises(TypeError, match="workload"):
        ad.simulate(R70, [1, 2, 3])
    with pytest.raises(TypeError, match="replica"):
        ad.simulate("llama", Workload.from_arrays([0.0], [10], [1]))
    with pytest.raises(ValueError, match="upload_at_s"):
        ad.upload_workload(1.0, 10.0, seed=0, upload_at_s=10.0)
    with pytest.raises(ValueError, match="drain=False needs duration_s"):
        ad.simulate(R70, Workload.from_arrays([0.0], [10], [1]), drain=False)
    no_kv = sizing.Replica("llama-3.3-70b", "h100-sxm", tp=1)
    with pytest.raises(ValueError, match="no KV memory"):
        ad.simulate(no_kv, Workload.from_arrays([0.0], [10], [1]))


def test_upload_report_phases_and_chunked_prefill_time():
    res = _upload_run("fcfs")
    rep = ad.upload_report(res)
    up = res.timelines[res.timelines.klass == ad.UPLOAD]
    assert rep["upload"]["ttft_s"] == pytest.approx(up.first_token_s[0] - 20.0)
    assert rep["upload"]["e2e_s"] == pytest.approx(up.finish_s[0] - 20.0)
    n = sum(rep[p]["requests"] for p in ("before", "during", "after"))
    assert n == int(np.sum(res.timelines.klass == ad.STUDENT))
    emit, worst = ad.worst_gap_by_time(res)
    assert np.all(np.diff(emit) > 0) and worst.max() == rep["during"]["itl_max_s"]
    with pytest.raises(ValueError, match="class 'upload'"):
        ad.upload_report(ad.simulate(R70, ad.poisson_workload(1.0, 5.0, seed=0)))
    # chunked prefill: one chunk = one step; more chunks cost more than one whole step
    assert ad.chunked_prefill_time_s(R70, 3000, 4096) == pytest.approx(
        sizing.iteration_time_s(R70, prefill=[(3000, 0)]))
    assert ad.chunked_prefill_time_s(R70, 3000, 1000) == pytest.approx(
        sum(sizing.iteration_time_s(R70, prefill=[(1000, k)]) for k in (0, 1000, 2000)))
    assert ad.chunked_prefill_time_s(R70, 40_000, 256) > ad.chunked_prefill_time_s(R70, 40_000, 2048)


def test_bursty_workload_from_workload_module():
    from vidya_lab.workload import FixedLength, make_workload, on_off_arrivals

    arr = on_off_arrivals(6.0, 5.0, 10.0, 60.0, seed=3)
    w = make_workload(arr, prompt_tokens=FixedLength(2000), output_tokens=FixedLength(100), seed=3)
    calm = ad.poisson_workload(float(len(w)) / 60.0, 60.0, seed=3, prompt_tokens=2000,
                               output_tokens=100)
    bursty, smooth = ad.simulate(R70, w), ad.simulate(R70, calm)
    assert bursty.finished == len(w) and smooth.finished == len(calm)
    # the same mean rate in bursts queues more: a longer TTFT tail
    assert bursty.summary()["ttft_s"]["p99"] > smooth.summary()["ttft_s"]["p99"]


# ----------------------------------------------------------------------------- engine defaults (issue 14)

def test_the_chunk_budget_defaults_to_the_engines():
    # vLLM V1, `vllm serve`: 8192 tokens on >= 70 GiB GPUs other than the A100, else 2048
    assert [ad.engine_default_chunk_tokens(g) for g in ("h100-sxm", "h200", "b200", "mi300x")] \
        == [8192] * 4
    assert [ad.engine_default_chunk_tokens(g) for g in ("a100-80gb", "l40s")] == [2048] * 2
    cfg = ad.SchedulerConfig()
    assert cfg.chunk_tokens is None and cfg.chunk_budget("h100-sxm") == 8192
    assert ad.SchedulerConfig(chunk_tokens=512).chunk_budget("h100-sxm") == 512
    # the default run prefills a 20,000-token prompt in 8192-token steps
    res = ad.simulate(R70, Workload.from_arrays([0.0], [20_000], [2]))
    assert list(res.iterations.prefill_tokens) == [8192, 8192, 3616, 0]
    a100 = sizing.Replica("llama-3.3-70b", "a100-80gb", tp=4)
    res = ad.simulate(a100, Workload.from_arrays([0.0], [5000], [2]))
    assert list(res.iterations.prefill_tokens) == [2048, 2048, 904, 0]


def test_partial_prefill_settings_default_to_vllms_and_are_checked():
    cfg = ad.SchedulerConfig()
    assert (cfg.max_num_partial_prefills, cfg.max_long_partial_prefills) == (1, 1)
    # "long" is 4 % of the context length unless given: 131,072 tokens for Llama 3.x -> 5242
    assert cfg.long_prefill_tokens(R70.model) == int(0.04 * R70.model.max_context_tokens) == 5242
    assert ad.SchedulerConfig(long_prefill_token_threshold=1000).long_prefill_tokens(R70.model) \
        == 1000
    with pytest.raises(ValueError, match="max_long_partial_prefills must be an integer <= 2"):
        ad.SchedulerConfig(max_num_partial_prefills=2, max_long_partial_prefills=3)
    with pytest.raises(ValueError, match="policy 'chunked' only"):
        ad.SchedulerConfig(policy="priority", max_num_partial_prefills=2)
    with pytest.raises(TypeError, match="max_num_partial_prefills must be an integer"):
        ad.SchedulerConfig(max_num_partial_prefills=2.0)


def _upload_then_student(**cfg):
    """A 40,000-token upload at t = 0, then a student's 1,500-token question at t = 0.2 s."""
    w = Workload.from_arrays([0.0, 0.2], [40_000, 1500], [20, 20], klass=[ad.UPLOAD, ad.STUDENT])
    res = ad.simulate(R70, w, ad.SchedulerConfig(policy="chunked", **cfg))
    t = res.timelines
    return res, dict(zip(t.klass, t.first_token_s - t.arrival_s, strict=True))


def test_a_short_prompt_overtakes_a_long_upload_with_partial_prefills():
    one, ttft_one = _upload_then_student()                       # vLLM's default: 1
    two, ttft_two = _upload_then_student(max_num_partial_prefills=2)
    # with one partial prefill the upload takes the whole budget until it is done: the student
    # waits for its entire prefill
    upload_prefill = sum(one.iterations.duration_s[:5])           # 40,000 / 8192 -> 5 steps
    assert ttft_one[ad.STUDENT] > upload_prefill - 0.2 - 1e-9
    # with two, the budget is shared from the next step on: the question is prefilled in one
    # 4096-token share and answered within a couple of steps
    assert ttft_two[ad.STUDENT] < 0.25 * ttft_one[ad.STUDENT]
    first = two.iterations
    step_with_student = int(np.argmax(first.prefill_seqs == 2))
    assert first.prefill_tokens[step_with_student] == 4096 + 1500
    # the price: the upload's own first token comes later; both finish, nothing is lost
    assert ttft_two[ad.UPLOAD] > ttft_one[ad.UPLOAD]
    assert two.finished == one.finished == 2


def test_only_max_long_partial_prefills_long_prompts_run_at_once():
    # two uploads and then a question: with 3 partial prefills but 1 long one at a time, the second
    # upload keeps its place while the question passes it
    w = Workload.from_arrays([0.0, 0.0, 0.1], [40_000, 40_000, 1500], [5, 5, 5])
    res = ad.simulate(R70, w, ad.SchedulerConfig(max_num_partial_prefills=3))
    first = dict(enumerate(res.timelines.first_token_s))
    assert first[2] < first[0] < first[1]
    assert res.iterations.prefill_seqs.max() == 2                # never both uploads at once
    both = ad.simulate(R70, w, ad.SchedulerConfig(max_num_partial_prefills=3,
                                                  max_long_partial_prefills=2))
    assert both.iterations.prefill_seqs.max() == 3


# ----------------------------------------------------------------------------- boundaries (issue 16)

def test_max_request_tokens_is_the_too_long_boundary():
    most = ad.max_request_tokens(SMALL)
    assert most == (SMALL.kv_blocks - math.ceil(0.01 * SMALL.kv_blocks)) * SMALL.block_tokens + 1
    w = Workload.from_arrays([0.0, 1.0], [most - 1, most], [1, 1])
    res = ad.simulate(SMALL, w)
    assert list(res.reject_reason) == ["", "too_long"] and res.finished == 1
    assert ad.max_request_tokens(SMALL, ad.SchedulerConfig(kv_policy="reserve")) \
        == SMALL.kv_blocks * SMALL.block_tokens + 1
    assert ad.max_request_tokens(sizing.Replica("llama-3.3-70b", "h100-sxm", tp=1)) == 0


def test_wrong_types_and_truthy_flags_are_refused_by_name():
    w = ad.poisson_workload(1.0, 5.0, seed=0)
    with pytest.raises(TypeError, match="drain must be True or False"):
        ad.simulate(R70, w, duration_s=5.0, drain="False")
    with pytest.raises(TypeError, match="config must be a SchedulerConfig"):
        ad.simulate(R70, w, {"policy": "fcfs"})
    res = ad.simulate(R70, w)
    for fn, args in ((ad.itl_timeline, ()), (ad.worst_gap_by_time, ()), (ad.upload_report, ()),
                     (ad.window_summary, (0.0, 1.0))):
        with pytest.raises(TypeError, match="result must be a vidya_lab.admission.SimResult"):
            fn(res.timelines, *args)
    with pytest.raises(TypeError, match="replica must be a vidya_lab.sizing.Replica"):
        ad.saturation_rate_per_s("llama", 1000, 100)
    with pytest.raises(TypeError, match="klass must be a string"):
        ad.itl_timeline(res, klass=3)
    with pytest.raises(ValueError, match="prompt_tokens must be an integer <= 1000000000"):
        ad.poisson_workload(1.0, 5.0, seed=0, prompt_tokens=10**400)


def test_work_beyond_the_limits_is_refused_up_front():
    with pytest.raises(ValueError, match=r"expected requests; the limit is 1e\+06"):
        ad.poisson_workload(1e6, 1e6, seed=0)                     # refused before drawing any
    w = Workload.from_arrays([0.0, 0.0], [10, 10], [30_000_000, 30_000_000])
    with pytest.raises(ValueError, match=r"output tokens; the limit is 5e\+07"):
        ad.simulate(R70, w)
    one_long = Workload.from_arrays([0.0], [10], [6_000_000])    # 6e6 decode rounds, one by one
    with pytest.raises(ValueError, match=r"engine steps at least .*the limit is 5e\+06"):
        ad.simulate(R70, one_long)


def test_a_run_longer_than_the_step_limit_stops_with_the_limit(monkeypatch):
    from vidya_lab.admission import simulation

    monkeypatch.setattr(simulation, "MAX_STEPS", 360)
    w = ad.poisson_workload(1.0, 10.0, seed=0)                   # needs ~400 steps, at least 350
    with pytest.raises(ad.StepLimitExceeded, match="more than 360 engine steps"):
        ad.simulate(R70, w)
