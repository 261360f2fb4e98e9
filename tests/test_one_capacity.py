"""Issue 14: one definition of utilisation. The calculator's capacity (the cost model's saturated
cycle at the TPOT target, :func:`sizing.capacity_rps`) and the fleet's (the coarse replica model's
steady state within the targets, :meth:`autoscaling.ReplicaModel.capacity_rps`) are two ways to
compute the same number; they must agree, or "80 %" in chapter 2 and "60 %" in chapter 6 would be
percentages of different things."""

import pytest

from vidya_lab import autoscaling, sizing
from vidya_lab.scenario import TANVI

CASES = [("h100-sxm", 4, "bf16"), ("h200", 1, "fp8"), ("b200", 1, "fp8"), ("a100-80gb", 4, "bf16")]


@pytest.mark.parametrize("gpu, tp, precision", CASES)
@pytest.mark.parametrize("cached", [0, TANVI.syllabus_prompt_tokens + TANVI.subject_prompt_tokens
                                    - (TANVI.syllabus_prompt_tokens + TANVI.subject_prompt_tokens) % 16])
def test_calculator_and_fleet_capacities_agree(gpu, tp, precision, cached):
    r = sizing.Replica(TANVI.model_id, gpu, tp=tp, precision=precision)
    calc = sizing.capacity_rps(r, TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean,
                               TANVI.tpot_target_s, cached_tokens=cached)
    fleet = autoscaling.replica_model(r, cached_prefix_tokens=cached).capacity_rps()
    assert calc == pytest.approx(fleet, rel=0.06), (calc, fleet)


def test_the_prefix_cache_multiplies_capacity_where_prefill_dominates():
    r = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    isl, osl = TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean
    cold = sizing.capacity_rps(r, isl, osl, TANVI.tpot_target_s)
    warm = sizing.capacity_rps(r, isl, osl, TANVI.tpot_target_s, cached_tokens=3392)
    assert warm > 3 * cold  # 3,392 of 3,550 prompt tokens cached: prefill is most of the work
