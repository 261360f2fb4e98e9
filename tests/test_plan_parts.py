"""The planner's parts (issue 25): the tail that sizes chapter 2, the isolation's cache, the
candidate space, the failure domain."""

from __future__ import annotations

import pytest

from vidya_lab import caching, plan, sizing
from vidya_lab.plan import failures, isolation, tail
from vidya_lab.plan.candidates import prepare
from vidya_lab.scenario import TANVI


def _h200(budget=None):
    return sizing.Replica(TANVI.model_id, "h200", tp=1, precision="fp8",
                          max_batched_tokens=budget)


def test_isolation_by_policy():
    r = _h200(1024)
    shared = isolation.prefix_cache(r, TANVI, replicas=8, isolation="shared")
    school = isolation.prefix_cache(r, TANVI, replicas=8, isolation="per-school")
    student = isolation.prefix_cache(r, TANVI, replicas=8, isolation="per-student")
    assert shared["cached_tokens"] == plan.prefix_tokens(TANVI) == 3392
    assert 0 < school["cached_tokens"] < shared["cached_tokens"]
    assert school["cached_tokens"] % r.block_tokens == 0
    assert school["schools_per_replica"] == 13  # ceil(100 schools / 8 replicas)
    assert student["cached_tokens"] == 0 and student["token_hit_rate"] == 0.0
    # more schools on a replica, fewer cached tokens (chapter 4's table, one replica per group)
    crowded = isolation.prefix_cache(r, TANVI, replicas=1, isolation="per-school")
    assert crowded["cached_tokens"] <= school["cached_tokens"]
    one = caching.tenant_prefix_blocks(r.block_tokens) * r.block_tokens
    assert school["resident_prefix_tokens"] == min(13 * one,
                                                   int(isolation.RESIDENT_SHARE_MAX
                                                       * r.kv_capacity_tokens))


def test_the_itl_budget_is_the_largest_whose_fullest_iteration_holds():
    r = _h200()
    b = tail.itl_budget(r, TANVI, 3392)
    assert b == 1024
    rb = _h200(b)
    batch = sizing.slo_batch(rb, TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean, 0.1, 3392)
    assert sizing.cycle(rb, batch, TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean,
                        3392)["step_mixed_s"] <= TANVI.itl_target_s
    r2 = _h200(2 * b)
    batch2 = sizing.slo_batch(r2, TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean, 0.1, 3392)
    assert sizing.cycle(r2, batch2, TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean,
                        3392)["step_mixed_s"] > TANVI.itl_target_s
    assert tail.itl_budget(r, plan.what_if(itl_target_s=1e-3), 3392) is None


def test_prepare_sets_the_candidate_up_as_it_runs():
    c = plan.cheapest_per_gpu(plan.candidates(cached_tokens=3392))
    h200 = next(x for x in c if (x.gpu, x.precision) == ("h200", "fp8"))
    p, why = prepare(h200, TANVI)
    assert why is None
    assert p.budget_tokens == 1024 and p.replica().max_batched_tokens == 1024
    assert p.cache["isolation"] == "per-school" and p.cached_tokens == p.cache["cached_tokens"]
    assert p.calculator["replicas"] >= h200.layout.replicas  # isolation never helps
    none, why = prepare(h200, plan.what_if(itl_target_s=1e-3))
    assert none is None and why.startswith("ITL")


@pytest.mark.parametrize("tp, serving, lost", [(1, 19, 7), (1, 9, 5), (1, 1, 1), (1, 2, 1),
                                               (2, 8, 4), (8, 3, 1), (16, 2, 1)])
def test_a_node_takes_its_share_of_the_fleet(tp, serving, lost):
    """Replicas spread evenly on the fewest 8-GPU nodes that hold them, at least two: 19 one-GPU
    replicas on 3 nodes lose 7 with one; a replica wider than a node loses only itself."""
    c = plan.Candidate("h200", "fp8", plan.candidates(gpu_ids=["h200"], precisions=("fp8",))[0]
                       .layout)
    import dataclasses
    c = dataclasses.replace(c, layout=dataclasses.replace(c.layout, tp=tp))
    assert failures.replicas_lost(c, "node", serving) == lost
    assert failures.replicas_lost(c, "replica", serving) == 1


def test_the_peak_is_the_busiest_minute():
    t = failures.peak_time_s(TANVI, "exam")
    curve = plan.day_curve(TANVI, "exam")
    assert curve.rate_per_s([t])[0] == pytest.approx(TANVI.exam_peak_rps, rel=1e-3)
