"""Chapter 6 widget: a policy, the parts of a cold start and some headroom → the fleet over the day,
the share of each hour's requests that missed the targets (bars from zero, the 1 % budget
dashed), and the bill.

No math here. The day is :func:`vidya_lab.autoscaling.simulate_day` on Tanvi's replica at the
*fluid* fidelity (:func:`vidya_lab.autoscaling.simulate_fluid`): the whole 24-hour day, tick by
tick of the autoscaler (15 s), with the day's expected arrivals instead of individual requests,
the same policies, cold starts and headroom as the fleet simulator, and each tick's attainment
read off one replica's measured steady curve. It lands within about one replica hour by hour and
half a point of rush attainment of :func:`~vidya_lab.autoscaling.simulate_fleet` (every request;
the chapter's printed numbers), and within 7 % on GPU-hours (``tests/test_autoscaling.py``); the
widget's caption says which model it shows. :func:`compute_view` (numbers) and :func:`draw` (a
matplotlib figure) are plain functions that tests call without a browser; :func:`build` wires
them to controls.

Speed: each policy's schedule or forecast (made when the widget is built; only its lead, the cold
start, changes), the coarse replica and its steady curve, and the figure (drawn once; a change redraws only the curves, the
bars and the axes) are made once and kept; each setting's day is cached (the last 64). A new
setting costs a fluid day (about 20 ms) and a frame, within the book's 100 ms goal for a control
change (``benchmarks/bench_widgets.py``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np
from matplotlib.figure import Figure

from vidya_lab import autoscaling, layouts, sizing
from vidya_lab.scenario import TANVI

#: The widget's step, seconds: the autoscaler's tick (the fluid model ticks at it).
DT_S = 15.0
#: Seeds the predictive policy's "yesterday" (the fluid day itself has no randomness).
SEED = 6
#: The fleet model the widget shows (:func:`vidya_lab.autoscaling.simulate_fluid`).
FIDELITY = "fluid"
DEFAULTS = autoscaling.ColdStart()
#: The share of an hour's requests allowed to miss the targets (1 − Tanvi's attainment target):
#: the lower panel's dashed line; its bars start at zero.
MISS_BUDGET = 1.0 - TANVI.attainment_target
#: Where the chapter runs live: Binder (a server) and the book's JupyterLite site (in the browser,
#: relative to a chapter's page).
BINDER_URL = ("https://mybinder.org/v2/gh/vidya-lab/vidya-lab/main?urlpath=lab/tree/"
              "chapters/06_autoscaling.md")
LITE_URL = "../lite/lab/index.html?path=chapters/06_autoscaling.ipynb"


@lru_cache(maxsize=1)
def _replica() -> sizing.Replica:
    gpu = TANVI.candidate_gpu_ids[0]
    return sizing.Replica(TANVI.model_id, gpu, tp=layouts.reference_tp(TANVI.model_id, gpu))


@lru_cache(maxsize=1)
def _model() -> autoscaling.ReplicaModel:
    return autoscaling.replica_model(_replica())


@lru_cache(maxsize=8)
def _policy(policy: str, day: str):
    """The named policy as :func:`~vidya_lab.autoscaling.simulate_day` makes it, with no lead
    (:func:`compute_view` gives it the cold start as its lead)."""
    return autoscaling.make_policy(policy, _model(), day=day, lead_s=0.0, seed=SEED)


@lru_cache(maxsize=64)
def compute_view(policy: str = "reactive", day: str = "exam",
                 provision_s: float = DEFAULTS.provision_s,
                 storage_gb_per_s: float = DEFAULTS.storage_bytes_per_s / 1e9,
                 registry_mb_per_s: float = DEFAULTS.registry_bytes_per_s / 1e6,
                 engine_start_s: float = DEFAULTS.engine_start_s, headroom: int = 0) -> dict:
    """Everything the widget shows, as numbers (the fluid fleet model, :data:`FIDELITY`).

    Returns ``cold_parts_s`` (dict), ``cold_start_s``, ``t_h`` (hours), ``serving`` and ``billed``
    (replicas per step), ``demand`` (arrival rate ÷ one replica's capacity at the target
    utilisation, per step), ``per_hour_attainment`` (24 values, None for an empty hour),
    ``attainment``, ``rush_attainment``, ``gpu_hours``, ``cost_usd``, ``max_replicas`` and the inputs.
    """
    cold = autoscaling.ColdStart(provision_s=float(provision_s),
                                 storage_bytes_per_s=float(storage_gb_per_s) * 1e9,
                                 registry_bytes_per_s=float(registry_mb_per_s) * 1e6,
                                 engine_start_s=float(engine_start_s))
    pol = _policy(policy, day)
    if policy != "reactive":  # scheduled and predictive start replicas one cold start early
        pol = replace(pol, lead_s=cold.total_s(_replica()))
    d = autoscaling.simulate_day(_replica(), day=day, policy=pol, cold_start=cold, seed=SEED,
                                 dt_s=DT_S, headroom=int(headroom), model=_model(),
                                 fidelity=FIDELITY)
    s = d["summary"]
    series = d["run"].series
    t = series["t_s"]  # tick starts, seconds
    rate = autoscaling.day_profile(day).rate_per_s(t)
    per_replica = _model().capacity_rps() * autoscaling.TARGET_UTILISATION
    return {"policy": policy, "day": day, "headroom": int(headroom),
            "cold_parts_s": cold.parts_s(_replica()), "cold_start_s": d["cold_start_s"],
            "t_h": t / 3600.0, "serving": series["serving"], "billed": series["billed"],
            "demand": rate / per_replica, "per_hour_attainment": s["per_hour_attainment"],
            "attainment": s["attainment"], "rush_attainment": s["rush_attainment"],
            "gpu_hours": s["gpu_hours"], "cost_usd": s["cost"], "max_replicas": s["max_replicas"]}


class _Plot:
    """Replicas against demand over the day (top) and, by hour, the share of requests that missed
    the targets, from zero (bottom), made once;
    an update replaces the curves' data, the bars' heights and colours, and the limits.

    ``show_titles=False`` is the widget's figure: no title (:func:`build` shows
    :func:`summary_html` under it), the legend above the top panel, and :attr:`frames` to draw only
    what moves.
    """

    def __init__(self, show_titles: bool = True, fig: Figure | None = None) -> None:
        from matplotlib.ticker import MaxNLocator

        self.show_titles = show_titles
        self.fig = Figure(figsize=(9.5, 5.2)) if fig is None else fig
        self.fig.clear()
        self.ax1, self.ax2 = self.fig.subplots(2, 1, sharex=True,
                                               gridspec_kw={"height_ratios": [2, 1]})
        ax1, ax2 = self.ax1, self.ax2
        (self.demand,) = ax1.plot([], [], color="#999", lw=1.5)
        (self.billed,) = ax1.plot([], [], drawstyle="steps-post", color="#c83", lw=1.2)
        (self.serving,) = ax1.plot([], [], drawstyle="steps-post", color="#246", lw=1.8)
        labels = ["replicas the load needs (at the target utilisation)",
                  "replicas billed (starting, serving, draining)", "replicas serving"]
        handles = [self.demand, self.billed, self.serving]
        if show_titles:
            ax1.legend(handles, labels, loc="upper left", fontsize=8)
        else:  # above the panel: the frames draw the curves after (over) the legend
            ax1.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2,
                       fontsize=8, frameon=False)
        ax1.set_ylabel("replicas")
        ax1.yaxis.set_major_locator(MaxNLocator(6, integer=True))
        hours = np.arange(24)
        self.bars = ax2.bar(hours + 0.5, np.zeros(24), width=0.8, color="#6a6").patches
        self.target = ax2.axhline(MISS_BUDGET * 100, color="black", ls="--", lw=1)
        ax2.set_ylabel("missed the\ntargets (%)")
        ax2.set_xlabel("hour of the day")
        ax2.yaxis.set_major_locator(MaxNLocator(4))
        ax2.set_xlim(0, 24)
        ax2.set_xticks(range(0, 25, 3))
        self.title = self.fig.suptitle("", fontsize=10)
        self.fig.subplots_adjust(left=0.07, right=0.98, bottom=0.1, hspace=0.08,
                                 top=0.91 if show_titles else 0.9)
        self._frames = None

    @property
    def frames(self):
        """The widget's :class:`~vidya_lab.widgets._blit.Frames` (legend and x axis drawn once)."""
        if self._frames is None:
            from vidya_lab.widgets._blit import Frames

            self._frames = Frames(self.fig, [self.ax1.yaxis, self.demand, self.billed,
                                             self.serving, self.ax2.yaxis, *self.bars,
                                             self.target], dpi=72)
        return self._frames

    def png(self, view: dict) -> bytes:
        """The widget's frame for ``view``, PNG bytes."""
        self.update(view)
        return self.frames.png()

    def update(self, view: dict) -> Figure:
        self.demand.set_data(view["t_h"], view["demand"])
        self.billed.set_data(view["t_h"], view["billed"])
        self.serving.set_data(view["t_h"], view["serving"])
        top = max(float(np.max(view["billed"])), float(np.max(view["demand"])), 1.0)
        self.ax1.set_ylim(-0.03 * top, top * 1.06)
        miss = missed_percent(view)
        for bar, x in zip(self.bars, miss, strict=True):
            bar.set_height(0.0 if np.isnan(x) else x)
            bar.set_color("#c33" if np.nan_to_num(x) > MISS_BUDGET * 100 else "#6a6")
        top = float(np.nanmax(miss)) if np.any(~np.isnan(miss)) else 0.0
        self.ax2.set_ylim(0.0, max(top * 1.1, MISS_BUDGET * 100 * 2.5))
        self.title.set_text(caption(view) if self.show_titles else "")
        return self.fig


def missed_percent(view: dict) -> np.ndarray:
    """Per hour, the share of its requests that missed the targets, % (NaN for an empty hour)."""
    att = np.array([np.nan if x is None else x for x in view["per_hour_attainment"][:24]])
    return (1.0 - att) * 100.0


def snapshot_note() -> str:
    """HTML under the widget: in the built book it is a snapshot; where to run it live."""
    return ("<p><em>In the built book this widget is a snapshot: its controls move but nothing is "
            "recomputed without a Python kernel. Run the chapter live "
            f'<a href="{BINDER_URL}">on Binder</a> or <a href="{LITE_URL}">in your browser '
            "(JupyterLite)</a>.</em></p>")


def caption(view: dict) -> str:
    """The figure's title: the day, the policy, the cold start, attainment and the bill."""
    return (f"{view['day']} day, {view['policy']}, N+{view['headroom']}: cold start "
            f"{view['cold_start_s'] / 60:.1f} min; attainment {view['attainment']:.2%} "
            f"(rush {view['rush_attainment']:.2%}); {view['gpu_hours']:,.0f} GPU-hours = "
            f"${view['cost_usd']:,.0f} (fluid fleet model)")


def summary_html(view: dict) -> str:
    """The figure's title as a line of HTML under the widget's figure."""
    return f"<p>{caption(view)}.</p>"


def draw(view: dict, fig: Figure | None = None) -> Figure:
    """Replicas against demand over the day, the misses by hour; the bill in the title (drawn into
    ``fig`` when given, cleared first)."""
    return _Plot(fig=fig).update(view)


def build():
    """The widget: policy, day, cold-start parts and headroom; the figure below."""
    import ipywidgets as widgets

    style = {"description_width": "14em"}
    layout = widgets.Layout(width="36em")
    policy = widgets.Dropdown(options=autoscaling.POLICIES, value="reactive",
                              description="policy", style=style, layout=layout)
    day = widgets.Dropdown(options=autoscaling.DAYS, value="normal", description="day",
                           style=style, layout=layout)
    prov = widgets.FloatSlider(value=DEFAULTS.provision_s, min=0.0,
                               max=autoscaling.PROVISION_RANGE_S[1], step=10.0,
                               description="node provisioning (s)", style=style, layout=layout)
    storage = widgets.FloatLogSlider(value=DEFAULTS.storage_bytes_per_s / 1e9, base=10, min=-1,
                                     max=1, step=0.05, description="weights bandwidth (GB/s)",
                                     style=style, layout=layout)
    registry = widgets.FloatLogSlider(value=DEFAULTS.registry_bytes_per_s / 1e6, base=10, min=1,
                                      max=3.5, step=0.05, description="image pull (MB/s)",
                                      style=style, layout=layout)
    engine = widgets.FloatSlider(value=DEFAULTS.engine_start_s, min=0.0, max=300.0, step=5.0,
                                 description="engine start (s)", style=style, layout=layout)
    head = widgets.IntSlider(value=0, min=0, max=5, description="headroom (N+k)", style=style,
                             layout=layout)
    text = widgets.HTML()
    controls = (policy, day, prov, storage, registry, engine, head)
    for name in autoscaling.POLICIES:  # made once here (a forecast draws a whole yesterday)
        for kind in autoscaling.DAYS:
            _policy(name, kind)
    plot = _Plot(show_titles=False)  # the title goes in the HTML
    # the figure: one PNG, replaced on every change, shown at its own width (not stretched)
    out = widgets.Image(format="png", layout=widgets.Layout(
        width=f"{plot.frames.width_px}px", max_width="100%"))

    def update(_change=None):
        view = compute_view(policy.value, day.value, prov.value, storage.value, registry.value,
                            engine.value, head.value)
        out.value = plot.png(view)
        text.value = summary_html(view)

    for w in controls:
        w.observe(update, names="value")
    update()
    return widgets.VBox([*controls, out, text])
