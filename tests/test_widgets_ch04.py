"""Chapter 4 widget: the update callback as a plain function."""

from __future__ import annotations

import pytest

from vidya_lab.widgets import ch04


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
