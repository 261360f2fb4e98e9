"""Chapter 2 widget: model, GPU, layout, precision, context and batch → memory bar and latency curve.

No math here: every number comes from :mod:`vidya_lab.sizing`. :func:`compute_view` (numbers) and
:func:`draw` (a matplotlib figure) are plain functions that tests call without a browser; :func:`build`
wires them to controls.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from vidya_lab import catalog, sizing
from vidya_lab.scenario import TANVI

TP_CHOICES = (1, 2, 4, 8)
PRECISIONS = ("bf16", "fp8", "int8", "int4")
CONTEXT_RANGE_TOKENS = (256, 32_768)
BATCH_RANGE = (1, 512)
#: Batches the latency/throughput curve is drawn at.
CURVE_BATCHES = tuple(int(b) for b in np.unique(np.geomspace(1, 1024, 41).round()))


def compute_view(model_id: str = TANVI.model_id, gpu_id: str = "h100-sxm", tp: int = 4,
                 precision: str = "bf16", context_tokens: int = 3900, batch: int = 32) -> dict:
    """Everything the widget shows, as numbers (bytes per GPU, seconds, tokens/s).

    Returns
    -------
    dict with the inputs, ``ok`` (False when the layout is impossible or the weights do not fit,
    with ``message`` saying why), ``memory`` (:func:`sizing.memory_breakdown` at ``batch``
    sequences of ``context_tokens``), ``curve`` (batch, calibrated TPOT, tokens/s, and the physical
    bound's TPOT at each of ``CURVE_BATCHES`` up to the sequences that fit), ``critical_batch``
    (calibrated; inf when decode stays memory-bound), ``tpot_s`` and ``tokens_per_s`` at ``batch``.
    """
    view = {"model_id": model_id, "gpu_id": gpu_id, "tp": int(tp), "precision": precision,
            "context_tokens": int(context_tokens), "batch": int(batch), "ok": False, "message": ""}
    try:
        r = sizing.Replica(model_id, gpu_id, tp=int(tp), precision=precision)
    except (ValueError, KeyError) as exc:
        view["message"] = str(exc.args[0] if exc.args else exc)
        return view
    mem = sizing.memory_breakdown(r, int(context_tokens), batch=int(batch))
    view["memory"] = mem
    if not r.weights_fit:
        view["message"] = (f"the weights ({r.weights_bytes_per_gpu / 1e9:.0f} GB per GPU) do not "
                           f"fit: raise tp or lower the precision")
        return view
    fit = mem["max_sequences"]
    if fit < 1:
        view["message"] = f"not even one {context_tokens}-token sequence fits in the KV cache"
        return view
    bound = r.with_calibration(sizing.PHYSICAL)
    batches = [b for b in CURVE_BATCHES if b <= fit] or [1]
    curve = []
    for b in batches:
        t = sizing.decode_step_time_s(r, b, int(context_tokens))
        curve.append((b, t, b / t, sizing.decode_step_time_s(bound, b, int(context_tokens))))
    b = min(int(batch), fit)
    tpot = sizing.decode_step_time_s(r, b, int(context_tokens))
    view.update(ok=True, curve=curve, critical_batch=sizing.critical_batch_size(r, int(context_tokens)),
                tpot_s=tpot, tokens_per_s=b / tpot, batch_used=b, max_sequences=fit,
                message="" if b == int(batch) else f"only {fit} sequences fit: batch capped at {fit}")
    return view


MEMORY_PARTS = (("weights", "weights_bytes", "#4c72b0"),
                ("activations + runtime", "activation_reserve_bytes", "#8c8c8c"),
                ("KV in use", "kv_used_bytes", "#dd8452"),
                ("KV free", "kv_unused_bytes", "#f3c9a8"),
                ("not allotted", "unallocated_bytes", "#e8e8e8"))


class _Plot:
    """A figure whose artists are made once and updated in place: a control change moves bars,
    lines and texts, and lays out nothing new (no ``tight_layout``, plain tick labels, few ticks).

    ``show_titles=False`` is the widget's figure: no titles and fixed legend labels (:func:`build`
    shows :func:`summary_html` under the figure instead, because matplotlib text is most of a
    redraw's time), the right panel's legend above it, and :attr:`frames` to draw only what moves.
    """

    def __init__(self, show_titles: bool = True, fig: Figure | None = None) -> None:
        from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullLocator

        self.show_titles = show_titles
        self.fig = Figure(figsize=(9.5, 3.6)) if fig is None else fig
        self.fig.clear()
        gs = self.fig.add_gridspec(1, 2, width_ratios=[1.15, 2.4], left=0.07, right=0.92,
                                   bottom=0.14, top=0.9 if show_titles else 0.86, wspace=0.2)
        self.ax_mem = self.fig.add_subplot(gs[0])
        self.ax_lat = self.fig.add_subplot(gs[1])
        self.ax_tput = self.ax_lat.twinx()
        ax = self.ax_mem
        # the bar on the left of its panel, its legend beside it (inside: no layout pass needed)
        self.bars = ax.bar([0] * len(MEMORY_PARTS), [0.0] * len(MEMORY_PARTS), width=0.6,
                           color=[c for _, _, c in MEMORY_PARTS]).patches
        self.hbm = ax.axhline(0.0, xmax=0.35, color="black", lw=1, ls="--")
        self.mem_legend = ax.legend([*self.bars[::-1], self.hbm],
                                    [name for name, _, _ in MEMORY_PARTS][::-1] + ["GPU memory"],
                                    fontsize=7, loc="center right", frameon=False)
        ax.set_xticks([])
        ax.set_xlim(-0.4, 1.75)
        ax.set_ylabel("GB per GPU")
        ax.yaxis.set_major_locator(MaxNLocator(4))
        self.mem_title = ax.set_title("", fontsize=9)
        ax = self.ax_lat
        (self.tpot,) = ax.plot([], [], color="#c44e52", marker=".")
        (self.bound,) = ax.plot([], [], color="#c44e52", ls=":")
        self.crit = ax.axvline(1.0, color="black", ls="--", lw=1)
        self.batch = ax.axvline(1.0, color="#4c72b0", lw=1)
        (self.tput,) = self.ax_tput.plot([], [], color="#55a868", marker=".")
        ax.set_xscale("log", base=2)
        # plain tick labels (1, 4, 16, ...): log axes default to mathtext, most of a redraw's time
        ax.xaxis.set_major_locator(LogLocator(base=2, numticks=7))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_locator(MaxNLocator(4))
        self.ax_tput.yaxis.set_major_locator(MaxNLocator(4))
        ax.set_xlabel("decode batch (sequences)")
        ax.set_ylabel("TPOT (ms)", color="#c44e52")
        self.ax_tput.set_ylabel("output tokens/s (replica)", color="#55a868")
        handles = [self.tpot, self.bound, self.tput, self.crit, self.batch]
        labels = ["TPOT, calibrated", "TPOT, physical bound", "tokens/s", "critical batch", "batch"]
        if show_titles:
            self.lat_legend = ax.legend(handles, labels, fontsize=7, loc="upper left")
        else:
            self.lat_legend = ax.legend(handles, labels, fontsize=7, loc="lower center", ncol=5,
                                        bbox_to_anchor=(0.5, 1.0), frameon=False)
        self.lat_title = ax.set_title("", fontsize=8)
        self.message = ax.text(0.5, 0.5, "", ha="center", va="center", wrap=True, fontsize=9,
                               transform=ax.transAxes)
        self._frames = None

    @property
    def frames(self):
        """The widget's :class:`~vidya_lab.widgets._blit.Frames` (legends and labels drawn once)."""
        if self._frames is None:
            from vidya_lab.widgets._blit import Frames

            self._frames = Frames(self.fig, [
                self.ax_mem.yaxis, *self.bars, self.hbm, self.ax_lat.xaxis, self.ax_lat.yaxis,
                self.ax_tput.yaxis, self.bound, self.tpot, self.crit, self.batch, self.tput,
                self.message], dpi=80)
        return self._frames

    def png(self, view: dict) -> bytes:
        """The widget's frame for ``view``, PNG bytes."""
        self.update(view)
        return self.frames.png(key=(view["ok"], "memory" in view))

    def update(self, view: dict) -> Figure:
        left, right = captions(view)
        ax = self.ax_mem
        self.mem_title.set_text(left if self.show_titles else "")
        m = view.get("memory")
        for artist in (*self.bars, self.hbm, self.mem_legend, ax.yaxis):
            artist.set_visible(m is not None)
        if m is not None:
            bottom = 0.0
            for bar, (_, key, _) in zip(self.bars, MEMORY_PARTS, strict=True):
                bar.set_y(bottom)
                bar.set_height(m[key] / 1e9)
                bottom += m[key] / 1e9
            if self.show_titles:
                self.mem_legend.get_texts()[2].set_text(f"KV in use ({m['sequences']} seqs)")
            self.hbm.set_ydata([m["hbm_bytes"] / 1e9] * 2)
            ax.set_ylim(0, max(bottom, m["hbm_bytes"] / 1e9) * 1.05)
        ok = view["ok"]
        self.ax_lat.axison = ok  # an impossible choice: only its message, no axes
        self.ax_tput.set_visible(ok)
        for artist in (self.tpot, self.bound, self.tput, self.crit, self.batch, self.lat_legend,
                       self.lat_title, self.ax_lat.xaxis, self.ax_lat.yaxis, self.ax_tput.yaxis):
            artist.set_visible(ok)
        self.message.set_text("" if ok else view["message"])
        self.message.set_visible(not ok)
        if not ok:
            return self.fig
        b, tpot, tput, tpot_bound = (np.array(c, dtype=float) for c in zip(*view["curve"], strict=True))
        self.tpot.set_data(b, tpot * 1e3)
        self.bound.set_data(b, tpot_bound * 1e3)
        self.tput.set_data(b, tput)
        lo, hi = float(b.min()), float(b.max())
        self.ax_lat.set_xlim(lo / 1.25, hi * 1.25 if hi > lo else lo * 2.0)
        low = float(min(tpot.min(), tpot_bound.min())) * 1e3
        high = float(tpot.max()) * 1e3
        pad = 0.05 * max(high - low, 0.05 * high)
        self.ax_lat.set_ylim(low - pad, high + pad)
        self.ax_tput.set_ylim(0.0, float(tput.max()) * 1.06)
        crit = view["critical_batch"]
        shown = bool(np.isfinite(crit) and crit <= hi)
        self.crit.set_visible(shown)
        if shown:
            self.crit.set_xdata([crit, crit])
        self.batch.set_xdata([view["batch_used"]] * 2)
        if self.show_titles:
            texts = self.lat_legend.get_texts()
            texts[3].set_text(f"critical batch {crit:.0f}" if shown else "critical batch: not reached")
            texts[4].set_text(f"batch {view['batch_used']}")
        self.lat_title.set_text(right if self.show_titles else "")
        return self.fig


def captions(view: dict) -> tuple[str, str]:
    """The two panels' titles: the GPU, and the replica with its TPOT and tokens/s at the batch
    (the impossible choice's message when there is one)."""
    left = f"{view['gpu_id']} memory"
    if not view["ok"]:
        return left, view["message"]
    crit = view["critical_batch"]
    crit_text = "memory-bound at any batch" if not np.isfinite(crit) else f"critical batch {crit:.0f}"
    return left, (f"{view['model_id']}, tp={view['tp']}, {view['precision']}, "
                  f"{view['context_tokens']} tokens: TPOT {view['tpot_s'] * 1e3:.1f} ms, "
                  f"{view['tokens_per_s']:,.0f} tokens/s ({crit_text})")


def summary_html(view: dict) -> str:
    """The figure's titles as a line of HTML under it (the widget's caption)."""
    left, right = captions(view)
    note = f" ({view['message']})" if view["ok"] and view["message"] else ""
    return f"<p>{left}. {right}{note}.</p>"


def draw(view: dict, fig: Figure | None = None) -> Figure:
    """Left: one GPU's memory as a stacked bar. Right: TPOT and tokens/s against batch (drawn into
    ``fig`` when given, cleared first)."""
    return _Plot(fig=fig).update(view)


def build():
    """The widget: model, GPU, tp, precision, context and batch; the figure below."""
    import ipywidgets as widgets
    style = {"description_width": "9em"}
    layout = widgets.Layout(width="30em")
    model = widgets.Dropdown(options=list(catalog.MODELS), value=TANVI.model_id,
                             description="model", style=style, layout=layout)
    gpu = widgets.Dropdown(options=list(catalog.GPUS), value="h100-sxm", description="GPU",
                           style=style, layout=layout)
    tp = widgets.Dropdown(options=list(TP_CHOICES), value=4, description="tensor parallel",
                          style=style, layout=layout)
    precision = widgets.Dropdown(options=list(PRECISIONS), value="bf16", description="precision",
                                 style=style, layout=layout)
    context = widgets.IntSlider(value=TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean,
                                min=CONTEXT_RANGE_TOKENS[0], max=CONTEXT_RANGE_TOKENS[1], step=256,
                                description="context (tokens)", style=style, layout=layout)
    batch = widgets.IntSlider(value=32, min=BATCH_RANGE[0], max=BATCH_RANGE[1],
                              description="batch", style=style, layout=layout)
    text = widgets.HTML()
    controls = (model, gpu, tp, precision, context, batch)
    plot = _Plot(show_titles=False)  # titles go in the HTML: matplotlib text is most of a redraw
    # the figure: one PNG, replaced on every change, shown at its own width (not stretched)
    out = widgets.Image(format="png", layout=widgets.Layout(
        width=f"{plot.frames.width_px}px", max_width="100%"))

    def update(_change=None):
        view = compute_view(model.value, gpu.value, tp.value, precision.value, context.value,
                            batch.value)
        png = plot.png(view)
        text.value = summary_html(view)
        out.value = png

    for w in controls:
        w.observe(update, names="value")
    update()
    return widgets.VBox([*controls, out, text])
