"""Chapter 5 exercises: the answers derived by hand, right answers pass, wrong paths get their hint."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vidya_lab import admission, catalog, plan, queueing, sizing
from vidya_lab import parallelism as par
from vidya_lab.exercises import ch05, get_exercise, judge, solve
from vidya_lab.exercises.registry import chapter_exercises
from vidya_lab.scenario import TANVI
from vidya_lab.workload import Workload

R = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
U = TANVI.upload_tokens
ISL, OSL = TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean


def test_levels_and_numbering():
    exs = chapter_exercises(5)
    assert [e.id for e in exs] == [f"5.{k}" for k in range(1, 10)]
    assert {e.level for e in exs} == {"compute", "explain", "design"}
    assert [e.id for e in exs if e.level == "design"] == ["5.5", "5.9"]


def test_5_1_the_freeze_by_hand():
    m, g = catalog.get_model(TANVI.model_id), catalog.get_gpu("h100-sxm")
    cal = R.calibration
    # compute: 2·P_act per token (weights of one GPU's share of the 80 layers) + attention's
    # 4·(h/tp)·hd·L per (query, key) pair over U(U+1)/2 pairs + one logit row, over peak × η
    p_gpu = m.n_layers * par.layer_params_per_gpu(m, 4, active=True)
    flops = (2 * p_gpu * U + 4 * (m.n_heads / 4) * m.head_dim * m.n_layers * U * (U + 1) / 2
             + 2 * m.vocab_size * m.d_model / 4)
    compute = flops / (g.flops_per_s("bf16") * cal.compute_efficiency("bf16", g.id))
    parts = sizing.iteration_breakdown(R, prefill=[(U, 0)])
    assert parts["compute_s"] == pytest.approx(compute, rel=1e-9)
    assert parts["bound"] == "compute"
    step = parts["overhead_s"] + parts["compute_s"] + parts["tp_comm_s"] + parts["layer_overhead_s"]
    assert step == pytest.approx(sizing.iteration_time_s(R, prefill=[(U, 0)]))
    assert judge(get_exercise("5.1"), step).right
    assert judge(get_exercise("5.1"), step * 1000).message.startswith("about 1000")


def test_5_2_one_stall_hides_in_the_tpot():
    n, stall, step = TANVI.answer_tokens_mean, 4.0, 0.025
    tpot = (stall + (n - 2) * step) / (n - 1)          # 349 gaps: one stall, 348 normal ones
    assert tpot == pytest.approx(0.036390, rel=1e-4) and tpot < TANVI.tpot_target_s
    assert judge(get_exercise("5.2"), tpot).right
    assert not judge(get_exercise("5.2"), stall).right


def test_5_3_iterations_and_the_simulator_agrees():
    # 40,000 tokens at 512 − 32 = 480 per iteration: 83 full iterations and one partial
    assert judge(get_exercise("5.3"), 84).right
    assert "round up" in judge(get_exercise("5.3"), 83).message
    n = 32
    w = Workload.from_arrays(np.append(np.zeros(n), 3.0), np.append(np.full(n, 100), U),
                             np.append(np.full(n, 1000), 1))
    res = admission.simulate(R, w, admission.SchedulerConfig(policy="chunked", chunk_tokens=512))
    log = res.iterations
    up_steps = np.flatnonzero((log.start_s >= 3.0) & (log.prefill_tokens > 0))
    assert up_steps.size == math.ceil(U / (512 - n)) == 84
    assert np.all(log.decode_count[up_steps] == n)
    assert log.prefill_tokens[up_steps].sum() == U


def test_5_4_what_repeats_is_the_fixed_cost_not_the_weights():
    # issue 14.5: a 512-token chunk on TP 4 is compute-bound, so its weight read hides under it
    one = sizing.iteration_breakdown(R, prefill=[(512, 0)])
    assert one["bound"] == "compute" and one["compute_s"] > 2.5 * one["weight_read_s"]
    total, done = 0.0, 0
    while done < U:
        c = min(512, U - done)
        total += sizing.iteration_time_s(R, prefill=[(c, done)])
        done += c
    whole = sizing.iteration_time_s(R, prefill=[(U, 0)])
    per_step = (total - whole) / (math.ceil(U / 512) - 1)
    assert judge(get_exercise("5.4"), per_step).right
    # the fixed parts of one iteration: host, per-layer overheads, the all-reduces' fixed latency
    fixed = one["overhead_s"] + one["layer_overhead_s"] + R._cost.tp_comm_fixed
    assert per_step == pytest.approx(fixed, rel=0.05)
    assert "compute-bound" in judge(get_exercise("5.4"), one["weight_read_s"]).message


def test_5_5_the_stall_free_budget_and_its_fleet():
    target, peak = TANVI.tpot_target_s, TANVI.exam_peak_rps
    budget = admission.stall_free_budget(R, ISL, OSL, target)
    tuned = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4, max_batched_tokens=budget,
                           max_num_seqs=min(R.max_num_seqs, budget))
    b = sizing.slo_batch(tuned, ISL, OSL, target)
    assert sizing.cycle(tuned, b, ISL, OSL)["step_mixed_s"] <= target
    gpus = 4 * math.ceil(peak / sizing.capacity_rps(tuned, ISL, OSL, target))
    assert judge(get_exercise("5.5"), gpus).right
    default_gpus = 4 * math.ceil(peak / sizing.capacity_rps(R, ISL, OSL, target))
    assert "8,192" in judge(get_exercise("5.5"), default_gpus).message


def test_5_6_and_5_7_the_upload_replica():
    step = sizing.iteration_time_s(R, prefill=[(U, 0)])
    rho = 0.05 * step
    assert judge(get_exercise("5.6"), rho * step / (2 * (1 - rho))).right
    c = solve(get_exercise("5.7"))
    a = 1.0 * step
    assert queueing.erlang_c(c, a) <= 0.1 < queueing.erlang_c(c - 1, a)


def test_5_8_the_transfer_by_hand():
    per_gpu = 2 * 80 * (8 // 4) * 128 * 2          # bytes per token on one GPU of TP 4
    t = 10e-6 + per_gpu * ISL / 50e9                # InfiniBand NDR: 50 GB/s per GPU, 10 µs
    assert judge(get_exercise("5.8"), t).right
    assert "quarter" in judge(get_exercise("5.8"), 10e-6 + 4 * per_gpu * ISL / 50e9).message


def test_5_9_the_cheaper_deployment():
    peak, target = TANVI.exam_peak_rps, TANVI.tpot_target_s
    w = admission.when_it_pays(R, peak, ISL, OSL, TANVI.ttft_target_s, target)
    colo, dis = w["colocated_stall_free"]["gpus"], w["disaggregated"]["gpus"]
    ex = get_exercise("5.9")
    assert judge(ex, min(colo, dis)).right and not judge(ex, max(colo, dis)).right
    # a warm cache: the prefix is not prefilled, nor sent, nor stored per sequence
    warm = {"cache": "warm"}
    k = plan.prefix_tokens(TANVI)
    ww = admission.when_it_pays(R, peak, ISL, OSL, TANVI.ttft_target_s, target, k)
    assert judge(ex, min(ww["colocated_stall_free"]["gpus"], ww["disaggregated"]["gpus"]),
                 warm).right
    # at a 40 ms target, nothing cached, disaggregation is the cheaper one
    tight = {"tpot_target_s": 0.04}
    wt = admission.when_it_pays(R, peak, ISL, OSL, TANVI.ttft_target_s, 0.04)
    assert wt["pays"] and solve(ex, tight) == wt["disaggregated"]["gpus"]


def test_every_value_of_every_given_gives_a_checkable_exercise():
    """Over the whole grid (sampled where large): the answer is right, each mistake gets its own
    hint, and no mistake is accepted as right."""
    import itertools
    import random

    from vidya_lab.exercises.givens import Pick

    def grid(gv):
        if isinstance(gv, Pick):
            return list(gv.options)
        n = int(round((gv.high - gv.low) / gv.step)) + 1
        return [gv.pick(i) for i in range(n)]

    rng = random.Random(5)
    for ex in chapter_exercises(5):
        if not ex.givens:
            continue
        names = list(ex.givens)
        combos = list(itertools.product(*(grid(ex.givens[n]) for n in names)))
        for combo in combos if len(combos) <= 60 else rng.sample(combos, 60):
            g = dict(zip(names, combo, strict=True))
            assert judge(ex, solve(ex, g), g).right, (ex.id, g)
            for m in ex.mistakes:
                verdict = judge(ex, m.value(ex.resolve_givens(g)), g)
                assert not verdict.right and verdict.message == m.hint, (ex.id, g, m.hint)


def test_the_data_module_holds_no_answers():
    assert not any(name.startswith("answer") for name in vars(ch05))
    assert ch05.given_value("upload_tokens") == U
