"""Chapter 1 widget: the update callback as a plain function."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from vidya_lab.widgets import ch01


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_view_numbers_follow_targets_and_load():
    light = ch01.compute_view(2.0, 0.1, 0.4)
    heavy = ch01.compute_view(2.0, 0.1, 2.2)
    assert set(light["ttft"]) == {"p50", "p90", "p95", "p99", "mean"}
    assert heavy["ttft"]["p99"] > light["ttft"]["p99"]
    assert heavy["attainment"] < light["attainment"] <= 1.0
    strict = ch01.compute_view(0.25, 0.02, 0.4)
    assert strict["attainment"] <= min(strict["attainment_ttft"], strict["attainment_tpot"])
    assert strict["attainment"] < light["attainment"]
    assert light["attainment_ttft"] == pytest.approx(
        float((light["ttft_s"] <= 2.0).sum()) / light["count"])


def test_draw_and_build():
    fig = ch01.draw(ch01.compute_view(2.0, 0.1, 1.0))
    assert len(fig.axes) == 2 and "attainment" in fig.texts[0].get_text()
    box = ch01.build()
    sliders = box.children[:3]
    sliders[2].value = 2.0  # the observer redraws without error
    assert sliders[0].value == 2.0 and len(box.children) == 5
    assert box.children[3].layout.width == f"{9 * 80}px"  # 9 inches at 80 dpi, not stretched


@pytest.mark.parametrize("position, value", [(0, 5.0), (1, 0.03), (2, 2.0)])
def test_every_control_updates_the_figure_and_the_caption(position, value):
    box = ch01.build()
    image, text = box.children[3], box.children[4]
    before_png, before_text = image.value, text.value
    assert before_png[:8] == b"\x89PNG\r\n\x1a\n"
    box.children[position].value = value
    assert image.value != before_png and text.value != before_text
    view = ch01.compute_view(*(c.value for c in box.children[:3]))
    assert text.value == ch01.summary_html(view)


def test_summary_html_states_the_markers_and_attainment():
    view = ch01.compute_view(2.0, 0.1, 1.2)
    html = ch01.summary_html(view)
    assert f"attainment {view['attainment']:.1%}" in html
    assert f"TTFT p50 {view['ttft']['p50']:.3g} s" in html and "target 2 s" in html
    assert f"p99 {view['tpot']['p99'] * 1000:.3g} ms, target 100 ms" in html


def test_frames_redraw_only_what_moves_yet_match_a_fresh_figure():
    """A frame drawn over the kept background is the frame a new figure draws for that view."""
    plot = ch01._Plot(show_titles=False)
    for rate in (0.4, 2.2):
        plot.png(ch01.compute_view(2.0, 0.1, rate))
    last = ch01.compute_view(9.0, 0.02, 1.2)
    again = plot.png(last)
    fresh = ch01._Plot(show_titles=False).png(last)
    assert np.array_equal(pixels(again), pixels(fresh))
    assert not np.array_equal(pixels(again), pixels(plot.png(ch01.compute_view(2.0, 0.1, 2.2))))
