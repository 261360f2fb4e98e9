"""Chapter 3 widget: the update callback as a plain function."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

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
    assert len(box.children) == 3
    left, right = box.children[0].children
    image, text = box.children[1], box.children[2]
    assert image.value[:8] == b"\x89PNG\r\n\x1a\n" and "4 × h100-sxm" in text.value
    tp = left.children[2]
    before_png, before_text = image.value, text.value
    tp.value = 8  # the observer redraws the figure and the caption
    assert image.value != before_png and "TP8" in text.value and text.value != before_text
    right.children[0].value = "pcie4"
    assert "PCIe" in text.value or "pcie" in text.value.lower()
    view = ch03.compute_view(*(c.value for c in left.children), *(c.value for c in right.children))
    assert text.value == ch03.summary_html(view)
    left.children[0].value = "opt-13b"
    tp.value = 16  # impossible: the figure shows the message, the caption says so, no exception
    assert "impossible layout" in text.value


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_frames_redraw_only_what_moves_yet_match_a_fresh_figure():
    plot = ch03._Plot()
    plot.png(ch03.compute_view(tp=1))
    plot.png(ch03.compute_view(model="opt-13b", tp=16))  # the message, then back to the bars
    plot.png(ch03.compute_view(tp=8, pp=2, interconnect="pcie4"))
    view = ch03.compute_view(tp=4, gpu="l40s", batch=64)
    again = plot.png(view)
    assert np.array_equal(pixels(again), pixels(ch03._Plot().png(view)))
    # only the GPUs of the replica get bars, and the chosen TP's step time is the note
    assert sum(b.get_visible() for b in plot.mem["weights_bytes"]) == view["gpus"]
    assert plot.note.get_text() == f"{view['parts']['total_s'] * 1e3:.1f} ms"
    error = ch03.compute_view(model="opt-13b", tp=16)
    assert np.array_equal(pixels(plot.png(error)), pixels(ch03._Plot().png(error)))
