"""Capstone widget: what-if sliders on Tanvi's forecast and targets → the cheapest layout of each
GPU type, with the token budget its ITL target needs.

No math here: the candidates come from :func:`vidya_lab.plan.candidates` (chapter 3's layout search on
the one cost model), each given the budget that keeps its fullest iteration within the ITL target
(:func:`vidya_lab.plan.tail.itl_budget`, chapter 5) and sized again by the calculator with it.
Moving a slider re-runs the calculator only (fast; one shared prefix cache counted); the simulated
plan — per-school isolation, the day busier than the forecast, the spares for a node loss, the
year's bill — is :func:`vidya_lab.plan.plan`, which the page runs once. :func:`compute_view`,
:func:`bars_html` (what the widget shows) and :func:`draw` (the same as a figure) are plain
functions tests call without a browser; :func:`build` wires them to sliders.
"""

from __future__ import annotations

import html
from dataclasses import replace

from matplotlib.figure import Figure

from vidya_lab import layouts, plan, sizing
from vidya_lab.plan.tail import itl_budget
from vidya_lab.scenario import TANVI


def _row(c, scenario) -> dict | None:
    """One candidate with its ITL budget, sized again by the calculator; None if no budget holds."""
    k = plan.prefix_tokens(scenario)
    budget = itl_budget(c.replica(), scenario, k)
    if budget is None:
        return None
    c = replace(c, budget_tokens=budget, cached_tokens=k)
    try:
        sized = sizing.gpus_for_peak_load(c.replica(), scenario.exam_peak_rps,
                                          scenario.prompt_tokens_mean, scenario.answer_tokens_mean,
                                          tpot_slo_s=scenario.tpot_target_s,
                                          utilisation=layouts.DEFAULT_UTILISATION, cached_tokens=k)
    except ValueError:
        return None
    per = c.gpus_per_replica
    return {"gpu": c.gpu, "precision": c.precision,
            "label": f"TP{c.layout.tp}×PP{c.layout.pp} ×{sized['replicas']}",
            "gpus": sized["gpus"], "budget_tokens": budget, "gpus_per_replica": per,
            "cost_per_hour": sized["cost_per_hour_usd"],
            "cost_per_month": sized["cost_per_hour_usd"] * 24 * plan.DAYS_PER_MONTH}


def compute_view(exam_multiplier: float = TANVI.exam_multiplier,
                 normal_peak_rps: float = TANVI.normal_peak_rps,
                 ttft_target_s: float = TANVI.ttft_target_s,
                 tpot_target_s: float = TANVI.tpot_target_s,
                 itl_target_s: float = TANVI.itl_target_s) -> dict:
    """The cheapest layout of each GPU type and precision that meets the TTFT, TPOT and ITL targets
    for the changed forecast, by the calculator at 80 % of capacity with one shared prefix cache.

    Returns a dict with the inputs, ``peak_rps`` (the exam peak, requests/s), ``rows`` (one per GPU
    type and precision, cheapest first: ``gpu``, ``precision``, ``label``, ``gpus``,
    ``budget_tokens`` (the ITL budget), ``cost_per_hour``, ``cost_per_month`` at the peak all
    month), ``no_itl_budget`` (the GPU types and precisions no budget holds the ITL target on) and
    ``error`` (None, or why no layout meets the targets).
    """
    scenario = replace(TANVI, exam_multiplier=exam_multiplier, normal_peak_rps=normal_peak_rps,
                       ttft_target_s=ttft_target_s, tpot_target_s=tpot_target_s,
                       itl_target_s=itl_target_s)
    view = {"exam_multiplier": exam_multiplier, "normal_peak_rps": normal_peak_rps,
            "ttft_target_s": ttft_target_s, "tpot_target_s": tpot_target_s,
            "itl_target_s": itl_target_s, "peak_rps": scenario.exam_peak_rps, "rows": [],
            "no_itl_budget": [], "error": None}
    cands = plan.cheapest_per_gpu(plan.candidates(scenario,
                                                  cached_tokens=plan.prefix_tokens(scenario)))
    for c in cands:
        row = _row(c, scenario)
        if row is None:
            view["no_itl_budget"].append(f"{c.gpu} {c.precision}")
        else:
            view["rows"].append(row)
    view["rows"].sort(key=lambda r: (r["cost_per_hour"], r["gpus"]))
    if not view["rows"]:
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
            f"TPOT ≤ {view['tpot_target_s'] * 1e3:g} ms, no gap over "
            f"{view['itl_target_s'] * 1e3:.0f} ms")


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
                    f"<td>${r['cost_per_hour']:,.0f}/h, {r['gpus']} GPUs, "
                    f"{r['budget_tokens']:,}-token budget</td></tr>")
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
        widgets.FloatSlider(value=round(TANVI.itl_target_s, 2), min=0.05, max=1.0, step=0.01,
                            description="ITL target (s)", style=style, layout=layout,
                            readout_format=".2f"),
    ]
    chart = widgets.HTML()

    def update(_change=None):
        chart.value = bars_html(compute_view(*(c.value for c in controls)))

    for c in controls:
        c.observe(update, names="value")
    update()
    return widgets.VBox([*controls, chart])
