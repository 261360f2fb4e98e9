"""Chapter 4's figures: drawn from what the package computed, labelled, nothing typed by hand."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from vidya_lab import caching
from vidya_lab.figures import ch04 as f4

R = caching.default_replica()


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_the_schematic_shows_the_package_keys_and_the_shared_blocks():
    a = list(range(22))
    b = a.copy()
    b[9] = 999
    fig = f4.block_hashing(a, b, 4)
    texts = _texts(fig)
    ka, kb = caching.block_hashes(a, 4), caching.block_hashes(b, 4)
    for k in ka + kb:
        assert f"key {k & 0xFFFF:04x}" in texts
    shared = [p for p in fig.axes[0].patches if p.get_facecolor()[:3] == pytest.approx(
        tuple(int(f4.SHARED[i:i + 2], 16) / 255 for i in (1, 3, 5)))]
    assert len(shared) == 2 * 2  # blocks 0 and 1 of both prompts
    assert texts.count("partial: not cached") == 2 and "999" in texts


def test_curve_figures_plot_what_they_are_given():
    sizes = np.array([5.0, 10.0])
    rows = caching.offload_sweep(caching.tutor_trace(200, seed=4, turns_mean=4), sizes * 1e9, 30e9, R)
    fig = f4.offload(sizes, rows, 30.0)
    left = fig.axes[0].lines[1].get_ydata()
    assert np.allclose(left, [x["hit_rate_tiered"] * 100 for x in rows])
    assert fig.axes[0].get_ylim()[0] == 0 and fig.axes[1].get_ylim()[0] == 0
    spec = f4.speculation([1, 2, 4], {"a": [1.5, 1.2, 0.9]}, {"exam batch": 2})
    assert spec.axes[0].get_ylim()[0] == 0 and spec.axes[0].get_xscale() == "log"
    probe = f4.side_channel([16, 1000], [1e-4, 0.08], 0.1, "one step")
    assert probe.axes[0].lines[1].get_ydata()[0] == pytest.approx(100.0)
    mem = f4.cache_memory([0, 1], [900.0, 3000.0], 950.0, 0.5)
    assert mem.axes[0].get_ylim()[0] == 0


def test_cliff_figure_draws_both_spreads():
    trace = caching.tutor_trace(200, seed=4, turns_mean=4)
    sizes = np.array([1.0, 5.0, 20.0])
    c = caching.cliff_sweep(trace, sizes * 1e9, R)
    fig = f4.cliff(sizes, c, c, R.kv_budget_bytes / 1e9)
    assert len(fig.axes[0].lines) == 4
    assert np.allclose(fig.axes[0].lines[0].get_ydata(), c["gain_share"] * 100)
