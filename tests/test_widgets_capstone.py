"""The capstone widget: the calculator's answer for a changed forecast, without a browser."""

from __future__ import annotations

from vidya_lab import plan
from vidya_lab.plan import tail
from vidya_lab.scenario import TANVI
from vidya_lab.widgets import capstone


def test_default_view_is_the_planners_candidates_with_their_itl_budget():
    view = capstone.compute_view()
    expected = plan.cheapest_per_gpu(plan.candidates(cached_tokens=plan.prefix_tokens(TANVI)))
    assert sorted((r["gpu"], r["precision"]) for r in view["rows"]) == \
        sorted((c.gpu, c.precision) for c in expected)
    assert view["peak_rps"] == TANVI.exam_peak_rps and view["itl_target_s"] == TANVI.itl_target_s
    costs = [r["cost_per_hour"] for r in view["rows"]]
    assert costs == sorted(costs)  # one row per GPU type, cheapest first
    for r in view["rows"]:  # each sized again with the budget that holds the ITL target
        c = next(x for x in expected if (x.gpu, x.precision) == (r["gpu"], r["precision"]))
        assert r["budget_tokens"] == tail.itl_budget(c.replica(), TANVI, plan.prefix_tokens(TANVI))
        assert r["gpus"] % r["gpus_per_replica"] == 0


def test_a_tight_itl_target_leaves_gpus_out():
    loose = capstone.compute_view()
    tight = capstone.compute_view(itl_target_s=0.07)
    assert len(tight["rows"]) + len(tight["no_itl_budget"]) == len(loose["rows"])
    assert tight["no_itl_budget"]  # some GPU type has no budget that holds 70 ms


def test_more_traffic_costs_more_for_the_cheapest():
    base = capstone.compute_view()["rows"][0]["cost_per_hour"]
    busier = capstone.compute_view(exam_multiplier=TANVI.exam_multiplier * 2)["rows"][0]
    assert busier["cost_per_hour"] > base


def test_impossible_targets_show_an_error_and_still_draw():
    view = capstone.compute_view(tpot_target_s=1e-4)
    assert view["rows"] == [] and "no layout" in view["error"]
    fig = capstone.draw(view)
    assert fig.axes


def test_draw_labels_every_candidate():
    view = capstone.compute_view()
    fig = capstone.draw(view)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == len(view["rows"])
    assert view["rows"][0]["gpu"] in labels[0]


def test_build_returns_a_widget():
    ui = capstone.build()
    assert ui.children  # sliders and the output area


def test_the_widgets_bars_are_the_views_rows_in_order():
    """What the widget shows (HTML bars): one row per candidate, cheapest first; each bar's width
    is its cost over the dearest one's."""
    import re

    view = capstone.compute_view()
    page = capstone.bars_html(view)
    widths = [float(w) for w in re.findall(r"height:0.9em;width:([\d.]+)%", page)]
    top = max(r["cost_per_hour"] for r in view["rows"])
    assert widths == [round(100 * r["cost_per_hour"] / top, 1) for r in view["rows"]]
    assert [m for m in re.findall(r"(\d+) GPUs", page)] == [str(r["gpus"]) for r in view["rows"]]
    assert page.index(view["rows"][0]["label"]) < page.index(view["rows"][-1]["label"])
    empty = capstone.bars_html(capstone.compute_view(tpot_target_s=1e-4))
    assert "no layout" in empty and "<table" not in empty
