"""Chapter 1's figures: drawn from the package's timelines and numbers, axes from zero, and close."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from vidya_lab import bench, slo  # noqa: E402
from vidya_lab.figures import ch01 as f1  # noqa: E402
from vidya_lab.toyserver import ToyServer, simulate, tutor_workload  # noqa: E402


@pytest.fixture(scope="module")
def busy() -> slo.Timelines:
    """A busy toy run with per-token times: many requests wait in the queue."""
    return simulate(tutor_workload(4.0, 120.0, seed=1), ToyServer(), record_token_times=True)


def _renders_and_closes(fig) -> None:
    assert isinstance(fig, Figure)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.tell() > 0
    plt.close(fig)


def test_anatomy_row_picks_a_waiting_request_of_the_asked_length(busy):
    row = f1.anatomy_row(busy, tokens=(12, 40))
    r = busy.record(row)
    assert r.admitted_s > r.arrival_s and 12 <= r.output_tokens <= 40
    assert f1.anatomy_row(busy, exclude=(row,)) != row
    with pytest.raises(ValueError, match="record_token_times"):
        f1.anatomy_row(simulate(tutor_workload(4.0, 60.0, seed=1), ToyServer()))
    with pytest.raises(ValueError, match="waited"):
        f1.anatomy_row(busy, tokens=(10**6, 10**6))


def test_request_anatomy_marks_the_requests_own_numbers(busy):
    row = f1.anatomy_row(busy)
    r = busy.record(row)
    fig = f1.request_anatomy(busy, row)
    (ax,) = fig.axes
    assert len(ax.patches) == 3  # queue, prefill, decode
    texts = " ".join(t.get_text() for t in ax.texts)
    assert f"TTFT = $f - a$ = {r.first_token_s - r.arrival_s:.2f} s" in texts
    assert f"end-to-end = $c - a$ = {r.finish_s - r.arrival_s:.2f} s" in texts
    assert f"({r.output_tokens} tokens)" in texts
    assert len(ax.collections[0].get_segments()) == r.output_tokens  # one tick per token
    assert ax.get_xlim()[1] == pytest.approx((r.finish_s - r.arrival_s) * 1.04)
    _renders_and_closes(fig)


def test_timelines_draws_one_row_per_request(busy):
    few = busy[np.arange(4)]
    fig = f1.timelines(few)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"request {i}" for i in (3, 2, 1, 0)]
    assert len(ax.patches) == 3 * 4
    assert sum(len(c.get_segments()) for c in ax.collections) == int(few.output_tokens.sum())
    ttft = slo.ttft_s(few)
    labels = [t.get_text() for t in ax.texts if t.get_text().startswith("TTFT")]
    assert labels == [f"TTFT {x:.2f} s" for x in ttft]
    _renders_and_closes(fig)


@pytest.mark.filterwarnings("error")  # tight_layout must fit the legend even for one run
@pytest.mark.parametrize("n", [1, 3])
def test_run_intervals_draws_each_run_from_zero(n):
    ivs = [bench.one_run_intervals(bench.open_loop(1.0, 600.0, seed=s).timelines, n_boot=100)
           for s in range(1, n + 1)]
    fig = f1.run_intervals(ivs, 0.9, (0.7, 1.1))
    (ax,) = fig.axes
    assert ax.get_xlim()[0] == 0
    assert len(ax.get_lines()) == 3 * n + 1  # per run two intervals and a dot; the long-run line
    assert ax.get_ylabel() == f"{n} independent runs"
    dots = [ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert dots == pytest.approx([iv.estimate for iv in ivs])
    _renders_and_closes(fig)


def test_attainment_curve_from_zero_with_target_and_goodput():
    rates, att = [1.0, 2.0, 3.0], [1.0, 0.95, 0.6]
    fig = f1.attainment_curve(rates, att, 2.4, 0.9)
    (ax,) = fig.axes
    assert ax.get_ylim() == pytest.approx((0.0, 1.02))
    lines = ax.get_lines()
    assert len(lines) == 3
    assert list(lines[0].get_ydata()) == att
    assert list(lines[1].get_ydata()) == [0.9, 0.9] and list(lines[2].get_xdata()) == [2.4, 2.4]
    _renders_and_closes(fig)


def test_open_vs_closed_from_zero_labelled_with_users():
    rows = bench.compare_open_closed((2, 8, 40), 30.0, seed=3)
    fig = f1.open_vs_closed(rows, 1.5)
    (ax,) = fig.axes
    assert ax.get_ylim()[0] == 0
    assert len(ax.get_lines()) == 3  # open, closed, target
    assert [t.get_text() for t in ax.texts] == ["2", "8", "40"]
    assert list(ax.get_lines()[1].get_ydata()) == [r["closed_p99_ttft_s"] for r in rows]
    _renders_and_closes(fig)


def test_table_by_hand():
    rows = [{"name": "a<b", "x": 1.23456, "n": None}, {"name": "c", "x": 2.0, "n": 3}]
    html = f1.table(rows, {"name": ("Name", ""), "x": ("x (s)", ".2f"), "n": ("n", "d")})
    assert html == ("<table class='table'><thead><tr><th>Name</th><th>x (s)</th><th>n</th></tr>"
                    "</thead><tbody><tr><td>a&lt;b</td><td>1.23</td><td>–</td></tr>"
                    "<tr><td>c</td><td>2.00</td><td>3</td></tr></tbody></table>")
