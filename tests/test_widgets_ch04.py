"""Chapter 4 widget: the update callback as a plain function."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from vidya_lab.widgets import ch04


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def test_view_follows_cache_size_and_prefix():
    big = ch04.compute_view(3000, 150, 30.0, 6)
    s = big["summary"]
    assert 0 < s["token_hit_rate"] <= 1 and s["ttft_s_p50_with"] < s["ttft_s_p50_without"]
    none = ch04.compute_view(3000, 150, 0.0, 6)["summary"]
    assert none["token_hit_rate"] == 0 and none["ttft_s_p50_with"] == pytest.approx(none["ttft_s_p50_without"])
    tiny = ch04.compute_view(3000, 150, 0.05, 6)["summary"]
    assert none["token_hit_rate"] < tiny["token_hit_rate"] < s["token_hit_rate"]
    assert tiny["cache_bytes_used"] <= 0.05e9
    no_prefix = ch04.compute_view(0, 150, 30.0, 1)["summary"]
    assert no_prefix["token_hit_rate"] < s["token_hit_rate"]


def test_draw_and_build():
    view = ch04.compute_view(3000, 150, 1.0, 6)
    fig = ch04.draw(view)
    assert len(fig.axes) == 2 and "token hit rate" in fig.axes[0].get_title()
    assert "GB per GPU" in ch04.summary_html(view)
    box = ch04.build()
    sliders, text = box.children[:4], box.children[5]
    before = text.value
    sliders[2].value = 0.1  # the observer recomputes and redraws
    assert text.value != before and "0.1 GB per GPU" in text.value
    assert len(box.children) == 6


@pytest.mark.parametrize("position, value", [(0, 1000), (1, 600), (2, 0.1), (3, 12)])
def test_every_control_updates_the_figure_and_the_caption(position, value):
    box = ch04.build()
    image, text = box.children[4], box.children[5]
    before_png, before_text = image.value, text.value
    assert before_png[:8] == b"\x89PNG\r\n\x1a\n"
    box.children[position].value = value
    assert image.value != before_png and text.value != before_text
    assert text.value == ch04.summary_html(ch04.compute_view(*(c.value for c in box.children[:4])))


def test_frames_redraw_only_what_moves_yet_match_a_fresh_figure():
    plot = ch04._Plot(show_titles=False)
    plot.png(ch04.compute_view(3000, 150, 30.0, 6))
    plot.png(ch04.compute_view(0, 4000, 0.01, 1))
    view = ch04.compute_view(3000, 400, 0.3, 12)
    again = plot.png(view)
    assert np.array_equal(pixels(again), pixels(ch04._Plot(show_titles=False).png(view)))
