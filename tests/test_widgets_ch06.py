"""Chapter 6 widget: the update callback as a plain function."""

from __future__ import annotations

import pytest

from vidya_lab import autoscaling
from vidya_lab.widgets import ch06


def test_view_follows_the_cold_start_and_headroom():
    base = ch06.compute_view("reactive", "normal")
    fast = ch06.compute_view("reactive", "normal", storage_gb_per_s=5.0)
    assert fast["cold_start_s"] < base["cold_start_s"]
    assert base["cold_start_s"] == pytest.approx(sum(base["cold_parts_s"].values()))
    assert base["cold_start_s"] == pytest.approx(
        autoscaling.ColdStart().total_s(ch06._replica()))
    spare = ch06.compute_view("reactive", "normal", headroom=2)
    assert spare["gpu_hours"] > base["gpu_hours"]
    assert spare["attainment"] >= base["attainment"]
    assert len(base["per_hour_attainment"]) == 24
    assert base["serving"].shape == base["t_h"].shape == base["demand"].shape


def test_draw_and_build():
    fig = ch06.draw(ch06.compute_view("scheduled", "normal"))
    assert len(fig.axes) == 2 and "GPU-hours" in fig.texts[0].get_text()
    box = ch06.build()
    box.children[2].value = 120.0  # the observer redraws without error
    assert len(box.children) == 8
