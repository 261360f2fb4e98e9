"""Draft heads: a one-layer drafter priced by the cost model, against the model's own pieces."""

from __future__ import annotations

import dataclasses

import pytest

from vidya_lab import caching, sizing

R = caching.default_replica()
CTX = 3725


def test_cost_ratio_is_a_one_layer_copy_of_the_target():
    head = dataclasses.replace(R, model=dataclasses.replace(
        R.model, id="x", n_layers=1, published_params=R.model.published_params / 80))
    want = sizing.decode_step_time_s(head, 8, CTX) / sizing.decode_step_time_s(R, 8, CTX)
    assert caching.head_draft_cost_ratio(R, 8, CTX) == pytest.approx(want)
    c1 = caching.head_draft_cost_ratio(R, 1, CTX)
    # far above 1/80 of a step: the output head and the per-iteration overhead are in it
    assert 1 / 80 < c1 < caching.spec_decode_at_batch(R, 1, CTX, 0.8, 4)["draft_cost_ratio"]
    assert caching.head_draft_cost_ratio(R, 1, CTX, layers=2) > c1


def test_speedup_is_theorem_3_8_at_batch_one_and_falls_with_the_batch():
    x = caching.draft_head_at_batch(R, 1, CTX, 0.8, 4)
    theorem = caching.spec_walltime_speedup(0.8, 4, x["draft_cost_ratio"])
    assert x["drafter"] == "draft-head"
    assert x["speedup"] == pytest.approx(theorem, rel=0.05)  # verify ≈ one step at batch 1
    be = caching.draft_head_break_even_batch(R, CTX, 0.8, 4)
    assert be is not None and be > caching.spec_break_even_batch(R, CTX, 0.8, 4)
    assert caching.draft_head_at_batch(R, be, CTX, 0.8, 4)["speedup"] < 1.0
    assert caching.draft_head_at_batch(R, be - 1, CTX, 0.8, 4)["speedup"] >= 1.0


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="layers"):
        caching.head_draft_cost_ratio(R, 1, CTX, layers=80)
    with pytest.raises(ValueError, match="alpha"):
        caching.draft_head_at_batch(R, 1, CTX, 1.5, 4)
