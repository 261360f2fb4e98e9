"""Chapter 1 widget: the update callback as a plain function."""

from __future__ import annotations

import pytest

from vidya_lab.widgets import ch01


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
    assert sliders[0].value == 2.0 and len(box.children) == 4
