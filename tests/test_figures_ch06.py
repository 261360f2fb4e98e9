"""Chapter 6's figures: drawn from the package's numbers, each axis from a meaningful base."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from vidya_lab import autoscaling as a
from vidya_lab.exercises import ch06 as ex6
from vidya_lab.figures import ch06 as f6


def test_the_scale_up_rows_are_the_packages_starts():
    r, cold = ex6.replica(), a.ColdStart()
    rows = f6.scale_up_rows(cold, r)
    total = {k: sum(v.values()) for k, v in rows.items()}
    assert list(total.values())[0] == pytest.approx(cold.total_s(r))
    fixed = a.mitigated(cold, "local_nvme", "slim_image", "compile_cache").total_s(r)
    assert list(total.values())[1] == pytest.approx(fixed)
    assert list(total.values())[2] == pytest.approx(a.pool_start_s(cold, r, "warm"))
    assert list(total.values())[3] == pytest.approx(a.pool_start_s(cold, r, "sleep"))
    keys = {k for k, _, _ in f6.PARTS}
    assert all(set(v) <= keys for v in rows.values())
    fig = f6.scale_up_path(rows, a.Fleet(ex6.model()).interval_s)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    assert "tick" in fig.axes[0].get_xlabel()


def test_fleet_routing_procurement_and_failover_figures_start_at_zero():
    m = ex6.model()
    runs = ex6.cold_start_runs()
    fig = f6.fleet_figure({k: runs[k] for k in ("sourced", "slow end")}, "exam", m,
                          hours=ex6.MORNING_H)
    assert fig.axes[0].get_ylim()[0] == 0 and fig.axes[0].get_xlim() == ex6.MORNING_H
    study = ex6.routing()
    fig = f6.routing_figure(study["runs"], ex6.routing_rows())
    assert [ax.get_ylim()[0] for ax in fig.axes] == [0, 0]
    curve = ex6.exam_day()["scheduled"]["replicas_by_hour"]
    fig = f6.procurement_figure(curve, 5, {k: 100.0 + (k - 5) ** 2 for k in range(10)})
    assert [ax.get_ylim()[0] for ax in fig.axes] == [0, 0]
    fig = f6.failover_figure(ex6.failover_grid())
    assert fig.axes[0].get_ylim()[0] == 0
    assert len(fig.axes[0].get_lines()) == 3  # two cold starts and the target
