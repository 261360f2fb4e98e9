"""Chapter 1 widget: choose TTFT/TPOT targets and a load, see the latency distributions and attainment.

No math here: the trace comes from :mod:`vidya_lab.toyserver` on Tanvi's traffic, the metrics from
:mod:`vidya_lab.slo`. :func:`compute_view` (numbers) and :func:`draw` (a matplotlib figure) are plain
functions that tests call without a browser; :func:`build` wires them to sliders.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from vidya_lab import slo
from vidya_lab.scenario import TANVI
from vidya_lab.toyserver import ToyServer, simulate, tutor_workload

#: Slider ranges: load in requests/s on one toy replica, targets in seconds.
RATE_RANGE_PER_S = (0.2, 2.4)
TTFT_RANGE_S = (0.25, 10.0)
TPOT_RANGE_S = (0.01, 0.2)
DURATION_S = 600.0
SEED = 7


@lru_cache(maxsize=64)
def trace_at(rate_per_s: float, duration_s: float = DURATION_S, seed: int = SEED) -> slo.Timelines:
    """The toy replica's timelines at ``rate_per_s`` (cached: moving a target slider re-uses it)."""
    return simulate(tutor_workload(rate_per_s, duration_s, seed=seed), ToyServer())


def compute_view(ttft_target_s: float, tpot_target_s: float, rate_per_s: float) -> dict:
    """Everything the widget shows, as numbers.

    Returns
    -------
    dict with ``ttft_s`` and ``tpot_s`` (arrays over finished requests, seconds), ``ttft`` and ``tpot``
    (:func:`vidya_lab.slo.percentile_summary` of each), ``attainment`` (0..1, both targets),
    ``attainment_ttft`` and ``attainment_tpot`` (each target alone), ``count``, and the inputs.
    """
    trace = trace_at(float(rate_per_s))
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


# ----------------------------------------------------------------------------- the timeline figure

def timeline_example(seed: int = 12) -> slo.Timelines:
    """A few requests on a two-slot toy replica, with every token's emit time (for the figure).

    Short answers (mean 40 tokens) so each token is visible; four requests arriving as a Poisson
    stream of 3 requests/s, so the third has to wait for a free slot.
    """
    from vidya_lab.workload import LognormalLength, make_workload, poisson_arrivals

    arrivals = poisson_arrivals(3.0, 10.0, seed=seed)[:4]
    w = make_workload(arrivals, prompt_tokens=LognormalLength(TANVI.prompt_tokens_mean,
                                                              TANVI.prompt_tokens_mean),
                      output_tokens=LognormalLength(40, 30, min_tokens=8), seed=seed)
    return simulate(w, ToyServer(max_batch=2), record_token_times=True)


def draw_timelines(trace: slo.Timelines, fig: Figure | None = None) -> Figure:
    """Draw each request's timeline: waiting, prefill, and every token as a tick; label TTFT and e2e.

    The bars are the trace's own timestamps (arrival, admission, first token, each token, finish).
    """
    fig = fig or Figure(figsize=(9, 1.2 + 0.75 * len(trace)))
    fig.clear()
    ax = fig.subplots()
    t0 = float(np.min(trace.arrival_s))
    for row in range(len(trace)):
        r = trace.record(row)
        y = len(trace) - 1 - row
        a, s, f, c = (x - t0 for x in (r.arrival_s, r.admitted_s, r.first_token_s, r.finish_s))
        ax.barh(y, s - a, left=a, height=0.5, color="#f2c57c", label="waiting in the queue" if row == 0 else None)
        ax.barh(y, f - s, left=s, height=0.5, color="#d9534f", label="prefill (one step)" if row == 0 else None)
        ax.barh(y, c - f, left=f, height=0.5, color="#9ab7d3", label="decode" if row == 0 else None)
        ticks = np.asarray(r.token_times_s) - t0
        ax.vlines(ticks, y - 0.25, y + 0.25, color="#1f3b57", lw=0.6,
                  label="a token is emitted" if row == 0 else None)
        ax.plot([a], [y], marker="v", color="black", ms=7, label="arrival" if row == 0 else None)
        ax.annotate("", xy=(f, y + 0.42), xytext=(a, y + 0.42),
                    arrowprops={"arrowstyle": "<->", "lw": 0.9})
        ax.text((a + f) / 2, y + 0.47, f"TTFT {f - a:.2f} s", ha="center", va="bottom", fontsize=8)
        tpot = (c - f) / (r.output_tokens - 1) if r.output_tokens > 1 else float("nan")
        ax.text(c + 0.01, y, f"{r.output_tokens} tokens, TPOT {tpot * 1000:.0f} ms, "
                f"e2e {c - a:.2f} s", va="center", fontsize=8)
    ax.set_yticks(range(len(trace)), [f"request {i}" for i in reversed(range(len(trace)))])
    ax.set_ylim(-0.6, len(trace) - 0.1 + 0.3)
    right = float(np.nanmax(trace.finish_s)) - t0
    ax.set_xlim(-0.02, right * 1.45)
    ax.set_xlabel("time since the first arrival (s)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=7, ncol=5, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig
