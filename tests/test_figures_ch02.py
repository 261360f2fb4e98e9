"""Chapter 2's schematics: what they draw is the package's numbers, and they add up."""

from __future__ import annotations

import math

import pytest

from vidya_lab import sizing
from vidya_lab.figures import ch02 as f2

MODEL = "llama-3.3-70b"


def rep(**kw) -> sizing.Replica:
    return sizing.Replica(MODEL, "h100-sxm", **kw)


@pytest.mark.parametrize("kw", [dict(tp=4), dict(tp=8), dict(tp=1, precision="fp8"),
                                dict(tp=1, precision="fp8", memory_rule="trtllm")])
def test_memory_parts_fill_the_reported_memory(kw):
    r = rep(**kw)
    m = f2.memory_parts(r, 3900)
    p = m["parts"]
    assert list(p) == [name for name, _ in f2.MEMORY_PARTS]
    assert p["runtime reserve"] == pytest.approx(sizing.RUNTIME_RESERVE_BYTES)
    assert p["runtime reserve"] + p["activations"] == pytest.approx(r.activation_reserve_bytes)
    assert p["KV cache budget"] == r.kv_budget_bytes
    assert sum(p.values()) == pytest.approx(r.gpu.hbm_bytes)  # as the device reports it
    if r.memory_rule == "vllm":  # vLLM leaves (1 - f) of the whole memory unused
        assert p["left unused by the rule"] == pytest.approx(0.1 * r.gpu.hbm_bytes)
    assert m["max_sequences"] == sizing.max_concurrent_sequences(r, 3900)


def test_activations_by_hand():
    # 8,192 tokens × (4 × 8,192 + 3 × 28,672 / 4) × 2 bytes on each GPU of TP 4
    act = f2.memory_parts(rep(tp=4), 3900)["parts"]["activations"]
    assert act == pytest.approx(8192 * (4 * 8192 + 3 * 28672 / 4) * 2)


def test_memory_bars_say_what_fits():
    reps = [rep(tp=1), rep(tp=4), rep(tp=1, precision="fp8", memory_rule="trtllm")]
    fig = f2.memory_bars(reps, 3900)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts[0] == "does not fit"
    assert texts[1] == f"{sizing.max_concurrent_sequences(reps[1], 3900)}\nconversations"
    assert [t.get_text() for t in ax.get_xticklabels()][2] == "TP 1, fp8\nTRT-LLM rule"
    labels = ax.get_legend_handles_labels()[1]
    assert {"reported by the device", "datasheet figure"} <= set(labels)
    assert "As the device reports it".lower() in ax.get_title().lower()


@pytest.mark.parametrize("bad", [[], [rep(tp=4)] * (f2.MAX_BARS + 1)])
def test_memory_bars_refuse_no_bars_or_too_many(bad):
    with pytest.raises(ValueError, match="number of replicas"):
        f2.memory_bars(bad, 3900)


def test_cycle_keys_by_hand():
    """The cycle's chunk and its mixed iterations (sizing.cycle) are the module formula's."""
    r = rep(tp=4)
    c = sizing.cycle(r, 91, 3550, 350)
    assert not c["budget_limited"]
    assert c["chunk_tokens"] == 8192 - 91
    assert c["mixed_iterations"] == pytest.approx(91 * 3550 / (8192 - 91))
    assert c["mixed_fraction"] == pytest.approx(c["mixed_iterations"] / 350)
    cycle_s = c["mixed_iterations"] * c["step_mixed_s"] + (350 - c["mixed_iterations"]) * c[
        "step_decode_s"]
    assert c["step_s"] == pytest.approx(cycle_s / 350)


def test_cycle_figure_draws_the_cycle():
    r = rep(tp=4)
    c = sizing.cycle(r, 91, 3550, 350)
    fig = f2.cycle_figure(r, 3550, 350, 91)
    left, right = fig.axes
    widths = [p.get_width() for p in right.patches]
    assert sum(widths) == pytest.approx(350 * c["step_s"])
    tokens = sorted(p.get_width() for p in left.patches)
    assert tokens[-1] == pytest.approx(c["chunk_tokens"])
    assert f"{c['step_s'] * 1e3:.0f} ms" in right.get_title()
    assert math.isclose(left.lines[0].get_xdata()[0], r.max_batched_tokens)


def test_cycle_figure_refuses_a_batch_beyond_the_engine():
    with pytest.raises(ValueError, match="batch"):
        f2.cycle_figure(rep(tp=4), 3550, 350, 10**6)
