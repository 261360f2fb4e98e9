"""Chapter 6 widget: the update callback as a plain function."""

from __future__ import annotations

import numpy as np
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


def test_kept_policy_gives_simulate_days_own_fluid_day():
    """The widget keeps the policy's schedule between changes: the day it shows is the one
    simulate_day makes from the names at the fluid fidelity (the schedule led by this cold
    start), and the caption says so."""
    view = ch06.compute_view("scheduled", "normal")  # cached: test_draw_and_build draws it too
    d = autoscaling.simulate_day(ch06._replica(), day="normal", policy="scheduled",
                                 cold_start=autoscaling.ColdStart(), seed=ch06.SEED,
                                 dt_s=ch06.DT_S, model=ch06._model(), fidelity="fluid")
    assert isinstance(d["run"], autoscaling.FluidRun)
    assert view["policy"] == "scheduled" and d["policy"].lead_s == view["cold_start_s"]
    assert view["gpu_hours"] == d["summary"]["gpu_hours"]
    assert view["attainment"] == d["summary"]["attainment"]
    assert view["rush_attainment"] == d["summary"]["rush_attainment"]
    assert (view["serving"] == d["run"].series["serving"]).all()
    assert "fluid fleet model" in ch06.caption(view)


def test_exam_rush_with_a_slow_cold_start_shows_red_hours():
    # the widget's story: a reactive fleet with slow weights misses the exam rush; scheduled,
    # started one cold start early, does not
    slow = ch06.compute_view("reactive", "exam", storage_gb_per_s=0.1)
    early = ch06.compute_view("scheduled", "exam", storage_gb_per_s=0.1)
    assert slow["cold_start_s"] > 20 * 60
    assert slow["rush_attainment"] < early["rush_attainment"]
    assert min(x for x in slow["per_hour_attainment"] if x is not None) < 0.99


def test_draw_and_build():
    fig = ch06.draw(ch06.compute_view("scheduled", "normal"))
    assert len(fig.axes) == 2 and "GPU-hours" in fig.texts[0].get_text()
    assert ch06.draw(ch06.compute_view("reactive", "normal"), fig) is fig  # redrawn into it
    assert len(fig.axes) == 2 and "reactive" in fig.texts[0].get_text()
    box = ch06.build()
    image, text = box.children[7], box.children[8]
    assert len(box.children) == 9 and image.value[:8] == b"\x89PNG\r\n\x1a\n"
    before_png, before_text = image.value, text.value
    box.children[2].value = 120.0  # node provisioning: the observer redraws
    assert image.value != before_png and text.value != before_text
    view = ch06.compute_view(*(c.value for c in box.children[:7]))
    assert text.value == ch06.summary_html(view) and "cold start" in text.value


def test_the_provisioning_slider_reaches_the_cited_end_and_the_misses_start_at_zero():
    box = ch06.build()
    assert box.children[2].max == autoscaling.PROVISION_RANGE_S[1]
    view = ch06.compute_view("reactive", "exam", provision_s=autoscaling.PROVISION_RANGE_S[1])
    fig = ch06.draw(view)
    assert fig.axes[1].get_ylim()[0] == 0.0  # the misses' bars from a meaningful base
    miss = ch06.missed_percent(view)
    att = [x for x in view["per_hour_attainment"] if x is not None]
    assert max(miss[~np.isnan(miss)]) == pytest.approx(100 * (1 - min(att)))


def test_the_snapshot_says_so_and_links_to_both_live_versions():
    note = ch06.snapshot_note()
    assert "snapshot" in note and ch06.BINDER_URL in note and ch06.LITE_URL in note
    assert ch06.LITE_URL.endswith("chapters/06_autoscaling.ipynb")
