"""Chapter 2 widget: the update callback as a plain function."""

from __future__ import annotations

import math

import pytest

from vidya_lab import sizing
from vidya_lab.widgets import ch02


def test_view_numbers_come_from_the_cost_model():
    v = ch02.compute_view("llama-3.3-70b", "h100-sxm", 4, "bf16", 3900, 32)
    assert v["ok"] and v["batch_used"] == 32
    r = sizing.Replica("llama-3.3-70b", "h100-sxm", tp=4)
    assert v["tpot_s"] == sizing.decode_step_time_s(r, 32, 3900)
    assert v["max_sequences"] == sizing.max_concurrent_sequences(r, 3900)
    assert v["memory"]["sequences"] == 32
    batches = [c[0] for c in v["curve"]]
    assert batches == sorted(batches) and batches[-1] <= v["max_sequences"]
    tpots = [c[1] for c in v["curve"]]
    assert tpots == sorted(tpots)
    assert all(c[3] < c[1] for c in v["curve"])  # the physical bound is faster
    assert math.isinf(v["critical_batch"])  # 3,900-token contexts keep decode memory-bound


def test_short_context_has_a_finite_critical_batch():
    v = ch02.compute_view("llama-3.1-8b", "h100-sxm", 1, "bf16", 256, 8)
    assert v["ok"] and 0 < v["critical_batch"] < 1024


def test_batch_is_capped_at_what_fits():
    v = ch02.compute_view("llama-3.3-70b", "h100-sxm", 4, "bf16", 32_768, 512)
    assert v["ok"] and v["batch_used"] == v["max_sequences"] < 512
    assert "capped" in v["message"]


@pytest.mark.parametrize("args, text", [
    (("llama-3.3-70b", "h100-sxm", 1, "bf16", 3900, 8), "do not fit"),
    (("opt-13b", "h100-sxm", 3, "bf16", 1024, 8), "tp must divide"),
])
def test_impossible_choices_explain_themselves(args, text):
    v = ch02.compute_view(*args)
    assert not v["ok"] and text in v["message"]
    fig = ch02.draw(v)
    assert any(text in t.get_text() for ax in fig.axes for t in ax.texts)


def test_draw_and_build():
    fig = ch02.draw(ch02.compute_view())
    assert len(fig.axes) == 3  # memory bar, TPOT, tokens/s twin
    box = ch02.build()
    controls = box.children[:6]
    controls[1].value = "h200"  # the observer redraws without error
    controls[5].value = 64
    assert len(box.children) == 7


def test_memory_bars():
    reps = [sizing.Replica("llama-3.3-70b", "h100-sxm", tp=t) for t in (1, 4, 8)]
    fig = ch02.draw_memory_bars(reps, 3900)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[0] == "does not fit"
    assert texts[1] == f"{sizing.max_concurrent_sequences(reps[1], 3900)} seqs"
