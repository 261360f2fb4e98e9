"""Chapter 2 widget: the update callback as a plain function."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
from PIL import Image

from vidya_lab import sizing
from vidya_lab.widgets import ch02


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


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
    assert ch02.draw(ch02.compute_view(batch=8), fig) is fig and len(fig.axes) == 3  # redrawn
    box = ch02.build()
    controls = box.children[:6]
    controls[1].value = "h200"  # the observer redraws without error
    controls[5].value = 64
    assert len(box.children) == 8


@pytest.mark.parametrize("position, value", [(0, "llama-3.1-8b"), (1, "h200"), (2, 8),
                                             (3, "fp8"), (4, 8192), (5, 64)])
def test_every_control_updates_the_figure_and_the_caption(position, value):
    box = ch02.build()
    image, text = box.children[6], box.children[7]
    before_png, before_text = image.value, text.value
    assert before_png[:8] == b"\x89PNG\r\n\x1a\n"
    box.children[position].value = value
    assert image.value != before_png and text.value != before_text
    assert text.value == ch02.summary_html(ch02.compute_view(*(c.value for c in box.children[:6])))


def test_caption_says_what_the_title_said():
    v = ch02.compute_view("llama-3.3-70b", "h100-sxm", 4, "bf16", 32_768, 512)
    html = ch02.summary_html(v)
    assert "h100-sxm memory" in html and f"TPOT {v['tpot_s'] * 1e3:.1f} ms" in html
    assert "memory-bound at any batch" in html and "capped" in html
    bad = ch02.compute_view("llama-3.3-70b", "h100-sxm", 1, "bf16", 3900, 8)
    assert "do not fit" in ch02.summary_html(bad)


def test_frames_redraw_only_what_moves_yet_match_a_fresh_figure():
    """A frame drawn over a kept background (also after an impossible choice, which has its own)
    is the frame a new figure draws for that view."""
    plot = ch02._Plot(show_titles=False)
    views = [ch02.compute_view(), ch02.compute_view("llama-3.3-70b", "h100-sxm", 1, "bf16", 3900, 8),
             ch02.compute_view("opt-13b", "h100-sxm", 3, "bf16", 1024, 8),
             ch02.compute_view("llama-3.1-8b", "h100-sxm", 1, "bf16", 256, 8)]
    for view in views:
        again = plot.png(view)
        assert np.array_equal(pixels(again), pixels(ch02._Plot(show_titles=False).png(view)))
