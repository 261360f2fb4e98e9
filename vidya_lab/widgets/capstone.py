"""Capstone widget: what-if sliders on Tanvi's forecast → the cheapest layout of each GPU type.

No math here: the candidates come from :func:`vidya_lab.plan.candidates` (chapter 3's layout search on
the one cost model). Moving a slider re-runs the calculator only (fast); the simulated confirmation
of a day is :func:`vidya_lab.plan.plan`, which the chapter runs once. :func:`compute_view`,
:func:`bars_html` (what the widget shows) and :func:`draw` (the same as a figure) are plain
functions tests call without a browser; :func:`build` wires them to sliders.
"""

from __future__ import annotations

import html
from dataclasses import replace

from matplotlib.figure import Figure

from vidya_lab import plan
from vidya_lab.scenario import TANVI


def compute_view(exam_multiplier: float = TANVI.exam_multiplier,
                 normal_peak_rps: float = TANVI.normal_peak_rps,
                 ttft_target_s: float = TANVI.ttft_target_s,
                 tpot_target_s: float = TANVI.tpot_target_s) -> dict:
    """The cheapest SLO-meeting layout of each GPU type and precision for the changed forecast,
    with the prefix cache counted as the plan counts it.

    Returns a dict with the inputs, ``peak_rps`` (the exam peak, requests/s), ``rows`` (one per GPU
    type and precision, cheapest first: ``gpu``, ``precision``, ``label``, ``gpus``,
    ``cost_per_hour``, ``cost_per_month`` at the peak all month) and ``error`` (None, or why no
    layout meets the targets).
    """
    scenario = replace(TANVI, exam_multiplier=exam_multiplier, normal_peak_rps=normal_peak_rps,
                       ttft_target_s=ttft_target_s, tpot_target_s=tpot_target_s)
    view = {"exam_multiplier": exam_multiplier, "normal_peak_rps": normal_peak_rps,
            "ttft_target_s": ttft_target_s, "tpot_target_s": tpot_target_s,
            "peak_rps": scenario.exam_peak_rps, "rows": [], "error": None}
    cands = plan.cheapest_per_gpu(plan.candidates(scenario,
                                                  cached_tokens=plan.prefix_tokens(scenario)))
    for c in cands:
        view["rows"].append({"gpu": c.gpu, "precision": c.precision, "label": c.layout.label,
                             "gpus": c.layout.gpus, "cost_per_hour": c.cost_per_hour,
                             "cost_per_month": c.cost_per_hour * 24 * plan.DAYS_PER_MONTH})
    if not cands:
        view["error"] = "no layout on any GPU type meets these targets at this load"
    return view


def draw(view: dict, fig: Figure | None = None) -> Figure:
    """Horizontal bars: USD per hour at the exam peak for each GPU type's cheapest layout (the
    figure for a page or a script; the widget shows the same as HTML, :func:`bars_html`)."""
    fig = fig or Figure(figsize=(8, 3.6))
    fig.clear()
    ax = fig.subplots(1, 1)
    rows = view["rows"]
    if not rows:
        ax.axis("off")
        ax.text(0.5, 0.5, view["error"], ha="center", va="center")
        return fig
    names = [f"{r['gpu']} {r['precision']}  {r['label']}" for r in rows]
    costs = [r["cost_per_hour"] for r in rows]
    ax.barh(range(len(rows)), costs, color=["#08519c"] + ["#9ecae1"] * (len(rows) - 1))
    ax.set_yticks(range(len(rows)), names, fontsize=8)
    ax.invert_yaxis()
    for i, r in enumerate(rows):
        ax.text(r["cost_per_hour"], i, f"  {r['gpus']} GPUs", va="center", fontsize=7)
    ax.set_xlabel("USD per hour at the exam peak")
    ax.set_xlim(0, max(costs) * 1.25)
    ax.set_title(_title(view), fontsize=9)
    fig.tight_layout()
    return fig


def _title(view: dict) -> str:
    return (f"Peak {view['peak_rps']:g} requests/s, TTFT ≤ {view['ttft_target_s']:g} s, "
            f"TPOT ≤ {view['tpot_target_s'] * 1e3:g} ms")


def bars_html(view: dict) -> str:
    """The view as an HTML bar chart, what the widget shows: the same bars as :func:`draw`, with
    text the browser sets (sharp at any zoom, and a control change costs no drawing)."""
    rows = view["rows"]
    if not rows:
        return f"<p><b>{html.escape(_title(view))}</b>: {html.escape(view['error'])}</p>"
    top = max(r["cost_per_hour"] for r in rows)
    body = []
    for i, r in enumerate(rows):
        color = "#08519c" if i == 0 else "#9ecae1"
        bar = (f'<div style="background:{color};height:0.9em;'
               f'width:{100 * r["cost_per_hour"] / top:.1f}%"></div>')
        body.append(f"<tr><td>{html.escape(r['gpu'])} {html.escape(r['precision'])}</td>"
                    f"<td>{html.escape(r['label'])}</td><td style=\"width:40%\">{bar}</td>"
                    f"<td>${r['cost_per_hour']:,.0f}/h, {r['gpus']} GPUs</td></tr>")
    return (f"<table><caption>{html.escape(_title(view))}</caption><tr><th>GPU</th><th>layout</th>"
            f'<th colspan="2">USD per hour at the exam peak</th></tr>{"".join(body)}</table>')


def build():
    """Sliders on the forecast and the targets; the bars (:func:`bars_html`) update as they move."""
    import ipywidgets as widgets

    style = {"description_width": "12em"}
    layout = widgets.Layout(width="32em")
    controls = [
        widgets.FloatSlider(value=TANVI.exam_multiplier, min=2.0, max=20.0, step=1.0,
                            description="exam multiplier", style=style, layout=layout),
        widgets.FloatSlider(value=TANVI.normal_peak_rps, min=1.0, max=12.0, step=0.5,
                            description="normal peak (requests/s)", style=style, layout=layout),
        widgets.FloatSlider(value=TANVI.ttft_target_s, min=0.5, max=5.0, step=0.25,
                            description="TTFT target (s)", style=style, layout=layout),
        widgets.FloatSlider(value=TANVI.tpot_target_s, min=0.03, max=0.2, step=0.01,
                            description="TPOT target (s)", style=style, layout=layout,
                            readout_format=".2f"),
    ]
    chart = widgets.HTML()

    def update(_change=None):
        chart.value = bars_html(compute_view(*(c.value for c in controls)))

    for c in controls:
        c.observe(update, names="value")
    update()
    return widgets.VBox([*controls, chart])
