"""Chapter 1 widget: choose TTFT/TPOT targets and a load, see the latency distributions and attainment.

No math here: the trace comes from :mod:`vidya_lab.toyserver` on Tanvi's traffic, the metrics from
:mod:`vidya_lab.slo`. :func:`compute_view` (numbers) and :func:`draw` (a matplotlib figure) are plain
functions that tests call without a browser; :func:`build` wires them to sliders. The widget's
trace at a load is ten minutes with the busy trace's seed, so at the busy load (1.4 requests/s) it
is the chapter's busy trace itself, and shows the same p99 as the prose. The chapter's other
figures are in :mod:`vidya_lab.figures.ch01`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from vidya_lab import slo
from vidya_lab.exercises.ch01 import BUSY_SEED, TRACE_DURATION_S
from vidya_lab.scenario import TANVI
from vidya_lab.toyserver import ToyServer, simulate, tutor_workload

#: Slider ranges: load in requests/s on one toy replica, targets in seconds.
RATE_RANGE_PER_S = (0.2, 2.4)
TTFT_RANGE_S = (0.25, 10.0)
TPOT_RANGE_S = (0.01, 0.2)
#: Each load's trace: the busy trace's length and seed (one seed, one place: exercises/ch01.py).
DURATION_S, SEED = TRACE_DURATION_S, BUSY_SEED


@lru_cache(maxsize=64)
def trace_at(rate_per_s: float, duration_s: float = DURATION_S, seed: int = SEED) -> slo.Timelines:
    """The toy replica's timelines at ``rate_per_s`` (cached: moving a target slider re-uses it)."""
    return simulate(tutor_workload(rate_per_s, duration_s, seed=seed), ToyServer())


def compute_view(ttft_target_s: float, tpot_target_s: float, rate_per_s: float) -> dict:
    """Everything the widget shows at a load, as numbers: :func:`view_of` the trace at that load."""
    return view_of(trace_at(float(rate_per_s)), ttft_target_s, tpot_target_s, rate_per_s)


def view_of(trace: slo.Timelines, ttft_target_s: float, tpot_target_s: float,
            rate_per_s: float) -> dict:
    """Everything the widget shows for ``trace`` (run at ``rate_per_s``), as numbers.

    Returns
    -------
    dict with ``ttft_s`` and ``tpot_s`` (arrays over finished requests, seconds), ``ttft`` and ``tpot``
    (:func:`vidya_lab.slo.percentile_summary` of each), ``attainment`` (0..1, both targets),
    ``attainment_ttft`` and ``attainment_tpot`` (each target alone), ``count``, and the inputs.
    """
    trace = slo.as_timelines(trace)
    target = slo.SLO(ttft_s=ttft_target_s, tpot_s=tpot_target_s)
    ttft = slo.ttft_s(trace)
    tpot = slo.tpot_s(trace)
    return {
        "rate_per_s": float(rate_per_s),
        "ttft_target_s": target.ttft_s,
        "tpot_target_s": target.tpot_s,
        "count": len(trace),
        "ttft_s": ttft,
        "tpot_s": tpot,
        "ttft": slo.percentile_summary(ttft),
        "tpot": slo.percentile_summary(tpot),
        "attainment": slo.attainment(trace, target),
        "attainment_ttft": slo.attainment(trace, slo.SLO(ttft_s=target.ttft_s)),
        "attainment_tpot": slo.attainment(trace, slo.SLO(tpot_s=target.tpot_s)),
    }


PANELS = (("ttft_s", "ttft", "ttft_target_s", "TTFT", 1.0, "s"),
          ("tpot_s", "tpot", "tpot_target_s", "TPOT", 1000.0, "ms"))
BINS = 50


class _Plot:
    """A figure whose artists are made once and updated in place (a slider move redraws nothing new).

    ``show_titles=False`` is the widget's figure: fixed legend labels and no title (:func:`build`
    shows :func:`summary_html` under it, because matplotlib text is most of a redraw's time), and
    :attr:`frames` draws only what moves.
    """

    def __init__(self, show_titles: bool = True) -> None:
        self.show_titles = show_titles
        self.fig = Figure(figsize=(9, 3.4))
        self.panels = []
        for ax, (_, _, _, title, _, unit) in zip(self.fig.subplots(1, 2), PANELS, strict=True):
            stairs = ax.stairs(np.zeros(BINS), np.linspace(0.0, 1.0, BINS + 1), fill=True,
                               color="#9ab")
            p50 = ax.axvline(0.0, color="#246", lw=2)
            p99 = ax.axvline(0.0, color="#c33", lw=2)
            target = ax.axvline(0.0, color="black", ls="--", lw=1.5)
            if show_titles:
                legend = ax.legend([p50, p99, target], ["p50", "p99", "target"],
                                   loc="upper right", fontsize=8)
            else:  # above the panel: the frames draw the bars after (over) the legends
                legend = ax.legend([p50, p99, target], ["p50", "p99", "target"], ncol=3,
                                   loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8,
                                   frameon=False)
            ax.set_xlabel(f"{title} ({unit})")
            ax.set_ylabel("requests")
            ax.xaxis.set_major_locator(MaxNLocator(5))  # fewer tick labels: text is most of the
            ax.yaxis.set_major_locator(MaxNLocator(4))  # cost of a redraw
            self.panels.append((ax, stairs, (p50, p99, target), legend))
        self.title = self.fig.suptitle("", fontsize=10)
        self.fig.subplots_adjust(left=0.07, right=0.98, bottom=0.15,
                                 top=0.87 if show_titles else 0.9, wspace=0.22)
        self._frames = None

    @property
    def frames(self):
        """The widget's :class:`~vidya_lab.widgets._blit.Frames`: legends drawn once; a frame
        draws the histograms, the markers and both axes (their limits follow the data)."""
        if self._frames is None:
            from vidya_lab.widgets._blit import Frames

            dynamic = []
            for ax, stairs, lines, _ in self.panels:
                dynamic += [ax.xaxis, ax.yaxis, stairs, *lines]
            self._frames = Frames(self.fig, dynamic, dpi=80)
        return self._frames

    def png(self, view: dict) -> bytes:
        """The widget's frame for ``view``, PNG bytes."""
        self.update(view)
        return self.frames.png()

    def update(self, view: dict) -> Figure:
        for (ax, stairs, lines, legend), (values_key, summary_key, target_key, _, scale, unit) in \
                zip(self.panels, PANELS, strict=True):
            values = view[values_key]
            v = values[~np.isnan(values)] * scale
            summary, target = view[summary_key], view[target_key] * scale
            top = max(float(np.max(v)) if v.size else 1.0, target) * 1.05
            counts, edges = np.histogram(v, bins=BINS, range=(0.0, top))
            stairs.set_data(counts, edges)
            marks = (summary["p50"], summary["p99"])
            for line, x in zip(lines, (*(m * scale if m is not None else np.nan for m in marks),
                                       target), strict=True):
                line.set_xdata([x, x])
            if self.show_titles:
                for text, name, x in zip(legend.get_texts(), ("p50", "p99", "target"),
                                         (line.get_xdata()[0] for line in lines), strict=True):
                    text.set_text(f"{name} {x:.3g} {unit}")
            ax.set_xlim(0.0, top)
            ax.set_ylim(0.0, max(1, int(counts.max())) * 1.08)
        self.title.set_text(caption(view) if self.show_titles else "")
        return self.fig


def caption(view: dict) -> str:
    """The figure's title: the load and the attainment (both targets, each alone)."""
    return (f"{view['rate_per_s']:.2g} requests/s on one toy replica: attainment "
            f"{view['attainment']:.1%} (TTFT alone {view['attainment_ttft']:.1%}, "
            f"TPOT alone {view['attainment_tpot']:.1%})")


def summary_html(view: dict) -> str:
    """What the widget's figure shows, as a line of HTML under it: the title and the markers."""
    parts = []
    for _, summary_key, target_key, title, scale, unit in PANELS:
        s = view[summary_key]
        fmt = [f"{x * scale:.3g} {unit}" if x is not None else "–"
               for x in (s["p50"], s["p99"], view[target_key])]
        parts.append(f"{title} p50 {fmt[0]}, p99 {fmt[1]}, target {fmt[2]}")
    return f"<p>{caption(view)}.<br>{'; '.join(parts)}.</p>"


def draw(view: dict) -> Figure:
    """The two distributions with p50/p99 markers and targets, as a new figure."""
    return _Plot().update(view)


def build():
    """The widget: sliders for the TTFT target, the TPOT target and the load; the figure below."""
    import ipywidgets as widgets
    style = {"description_width": "11em"}
    layout = widgets.Layout(width="32em")
    ttft = widgets.FloatSlider(value=TANVI.ttft_target_s, min=TTFT_RANGE_S[0], max=TTFT_RANGE_S[1],
                               step=0.25, description="TTFT target (s)", style=style, layout=layout)
    tpot = widgets.FloatSlider(value=TANVI.tpot_target_s, min=TPOT_RANGE_S[0], max=TPOT_RANGE_S[1],
                               step=0.005, readout_format=".3f", description="TPOT target (s)",
                               style=style, layout=layout)
    rate = widgets.FloatSlider(value=1.2, min=RATE_RANGE_PER_S[0], max=RATE_RANGE_PER_S[1],
                               step=0.1, description="load (requests/s)", style=style,
                               layout=layout)
    text = widgets.HTML()
    plot = _Plot(show_titles=False)  # title and marker values go in the HTML
    # the figure: one PNG, replaced on every change, shown at its own width (not stretched)
    out = widgets.Image(format="png", layout=widgets.Layout(
        width=f"{plot.frames.width_px}px", max_width="100%"))

    def update(_change=None):
        view = compute_view(ttft.value, tpot.value, rate.value)
        png = plot.png(view)
        text.value = summary_html(view)
        out.value = png

    for w in (ttft, tpot, rate):
        w.observe(update, names="value")
    update()
    return widgets.VBox([ttft, tpot, rate, out, text])
