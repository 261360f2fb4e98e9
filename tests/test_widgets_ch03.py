"""Chapter 3 widget: the update callback as a plain function."""

from __future__ import annotations

import pytest

from vidya_lab import layouts, sizing
from vidya_lab.scenario import TANVI
from vidya_lab.widgets import ch03


def test_view_follows_tp_and_the_link():
    one = ch03.compute_view(tp=1)
    four = ch03.compute_view(tp=4)
    assert not one["fits"] and four["fits"]  # 70B bf16 on one 80 GB GPU does not fit
    assert one["memory"]["weights_bytes"] == pytest.approx(4 * four["memory"]["weights_bytes"],
                                                           rel=1e-3)
    assert four["parts"]["total_s"] < one["parts"]["total_s"]
    r = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    assert four["parts"] == layouts.tpot_parts(r, 32, TANVI.prompt_tokens_mean)
    pcie = ch03.compute_view(tp=4, interconnect="pcie4")
    assert pcie["parts"]["communication_s"] > four["parts"]["communication_s"]
    assert pcie["parts"]["weights_read_s"] == four["parts"]["weights_read_s"]
    assert [row["tp"] for row in four["sweep"]] == [1, 2, 4, 8, 16]
    assert four["sweep"][0]["communication_s"] == 0.0


def test_impossible_layout_is_a_message_not_an_exception():
    view = ch03.compute_view(model="opt-13b", tp=16)  # 40 heads: tp 16 does not divide them
    assert "tp must divide" in view["error"]
    fig = ch03.draw(view)
    assert "impossible layout" in fig.axes[0].texts[0].get_text()


def test_draw_and_build():
    fig = ch03.draw(ch03.compute_view(tp=8, pp=2))
    assert len(fig.axes) == 2 and "16 × h100-sxm" in fig.texts[0].get_text()
    box = ch03.build()
    left, right = box.children[0].children
    tp = left.children[2]
    tp.value = 8  # the observer redraws without error
    right.children[0].value = "pcie4"
    assert tp.value == 8 and len(box.children) == 2
