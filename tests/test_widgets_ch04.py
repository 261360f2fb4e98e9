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
    fig = ch04.draw(ch04.compute_view(3000, 150, 1.0, 6))
    assert len(fig.axes) == 2 and "GB per GPU" in fig.texts[0].get_text()
    box = ch04.build()
    sliders = box.children[:4]
    sliders[2].value = 0.1  # the observer redraws without error
    assert len(box.children) == 5
