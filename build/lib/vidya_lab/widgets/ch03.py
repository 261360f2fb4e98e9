"""Chapter 3 widget: pick a model, GPU, TP, PP and interconnect; see per-GPU memory and TPOT parts.

No math here: memory comes from :func:`vidya_lab.sizing.memory_breakdown`, the TPOT parts from
:func:`vidya_lab.layouts.tpot_parts` (the one cost model). :func:`compute_view` (numbers),
:func:`draw` (a matplotlib figure, the chapter's pictures) and :func:`summary_html` are plain
functions that tests call without a browser; :func:`build` wires them to drop-downs.

Speed: the widget's figure (:class:`_Plot`) is made once, with a bar for each of up to 16 GPUs and
each TP of :data:`TP_CHOICES`; a change sets the bars' heights, the lines, ticks and limits, and
:class:`~vidya_lab.widgets._blit.Frames` redraws only those over a kept background (legends drawn
once), into a PNG shown by a ``widgets.Image``; the titles are HTML under it. A control change
costs a few tens of milliseconds (``benchmarks/bench_widgets.py``; goal under 100 ms).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from vidya_lab import catalog, layouts, sizing
from vidya_lab.scenario import TANVI

TP_CHOICES = (1, 2, 4, 8, 16)
PP_CHOICES = (1, 2, 4, 8)
#: "native" = the GPU's own link; the others are :data:`vidya_lab.catalog.LINKS` ids.
INTERCONNECT_CHOICES = ("native", "nvlink3", "nvlink4", "nvlink5", "pcie4")
PRECISION_CHOICES = ("bf16", "fp8", "int4")
BATCH_CHOICES = (1, 8, 32, 64, 128)
PART_LABELS = {"weights_read_s": "weights read", "kv_read_s": "KV read",
               "compute_beyond_memory_s": "compute (beyond memory)",
               "communication_s": "communication", "layer_overhead_s": "per-layer launches",
               "overhead_s": "host (per step and per sequence)"}
PART_COLORS = {"weights_read_s": "#4c72b0", "kv_read_s": "#dd8452",
               "compute_beyond_memory_s": "#8172b3", "communication_s": "#c44e52",
               "layer_overhead_s": "#ccb974", "overhead_s": "#999999"}


def compute_view(model: str = TANVI.model_id, gpu: str = "h100-sxm", tp: int = 4, pp: int = 1,
                 interconnect: str = "native", precision: str = "bf16", batch: int = 32,
                 context_tokens: int = TANVI.prompt_tokens_mean) -> dict:
    """Everything the widget shows, as numbers.

    Returns a dict with the inputs, ``error`` (a message when the layout is impossible, else None),
    ``fits``, ``memory`` (:func:`vidya_lab.sizing.memory_breakdown` of one GPU of the fullest stage,
    bytes, with ``batch`` sequences of ``context_tokens``), ``usable_bytes`` (what the memory rule
    lets weights, activations and KV use), ``parts`` (:func:`vidya_lab.layouts.tpot_parts` of this
    layout) and ``sweep`` (the same parts at every valid TP in :data:`TP_CHOICES`, same PP and link).
    """
    link = None if interconnect == "native" else interconnect
    view = {"model": model, "gpu": gpu, "tp": tp, "pp": pp, "interconnect": interconnect,
            "precision": precision, "batch": batch, "context_tokens": context_tokens,
            "error": None}
    try:
        r = sizing.Replica(model, gpu, tp=tp, pp=pp, precision=precision, interconnect=link)
    except ValueError as exc:
        view["error"] = str(exc)
        return view
    view["gpus"] = r.n_gpus
    view["fits"] = r.weights_fit
    view["memory"] = sizing.memory_breakdown(r, context_tokens, batch)
    view["usable_bytes"] = r.usable_bytes
    view["link_name"] = (catalog.gpu_link(r.gpu) if link is None else catalog.get_link(link)).name
    view["parts"] = layouts.tpot_parts(r, batch, context_tokens)
    sweep = []
    for t in TP_CHOICES:
        try:
            rt = sizing.Replica(model, gpu, tp=t, pp=pp, precision=precision, interconnect=link)
        except ValueError:
            continue
        sweep.append({"tp": t, "fits": rt.weights_fit, **layouts.tpot_parts(rt, batch, context_tokens)})
    view["sweep"] = sweep
    return view


def _memory_panel(ax, view):
    mem = view["memory"]
    gb = 1e9
    w, a = mem["weights_bytes"] / gb, mem["activation_reserve_bytes"] / gb
    used, unused = mem["kv_used_bytes"] / gb, mem["kv_unused_bytes"] / gb
    n = min(view["gpus"], 16)
    xs = range(n)
    ax.bar(xs, [w] * n, color="#4c72b0", label="weights")
    ax.bar(xs, [a] * n, bottom=[w] * n, color="#999999", label="activations + runtime")
    ax.bar(xs, [used] * n, bottom=[w + a] * n, color="#dd8452",
           label=f"KV in use ({mem['sequences']} seqs)")
    ax.bar(xs, [unused] * n, bottom=[w + a + used] * n, color="#f3c9a8", label="KV free")
    ax.axhline(mem["hbm_bytes"] / gb, color="black", lw=1.5, label="HBM")
    ax.axhline(view["usable_bytes"] / gb, color="black", ls="--", lw=1, label="usable (rule)")
    ax.set_ylim(0, max(mem["hbm_bytes"] / gb, w + a + used + unused) * 1.45)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{i}" for i in xs], fontsize=7)
    ax.set_xlabel("GPU of the replica" + (" (first 16)" if view["gpus"] > 16 else ""))
    ax.set_ylabel("GB per GPU")
    verdict = "fits" if view["fits"] else "does NOT fit"
    ax.set_title(f"TP{view['tp']}×PP{view['pp']}: {w:.1f} GB weights per GPU, {verdict}",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper center", ncol=3)


def _tpot_panel(ax, view):
    sweep = view["sweep"]
    xs = range(len(sweep))
    bottom = [0.0] * len(sweep)
    for key in layouts.TPOT_PARTS:
        vals = [row[key] * 1e3 for row in sweep]
        ax.bar(xs, vals, bottom=bottom, color=PART_COLORS[key], label=PART_LABELS[key])
        bottom = [b + x for b, x in zip(bottom, vals, strict=True)]
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"TP{row['tp']}" + ("" if row["fits"] else "\n(no fit)") for row in sweep],
                       fontsize=8)
    for i, row in enumerate(sweep):
        if row["tp"] == view["tp"]:
            ax.get_xticklabels()[i].set_fontweight("bold")
            ax.annotate(f"{row['total_s'] * 1e3:.1f} ms", (i, row["total_s"] * 1e3),
                        ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("TPOT (ms per token)")
    ax.set_title(f"one decode step, batch {view['batch']}, {view['context_tokens']:,} tokens of "
                 f"context, PP{view['pp']}, {view['link_name']}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")


def draw(view: dict, fig: Figure | None = None) -> Figure:
    """Draw per-GPU memory bars and the TPOT parts per TP degree; return the figure."""
    fig = fig or Figure(figsize=(10, 3.8))
    fig.clear()
    if view["error"]:
        ax = fig.subplots(1, 1)
        ax.axis("off")
        ax.text(0.5, 0.5, "impossible layout: " + view["error"], ha="center", va="center",
                wrap=True, fontsize=10)
        return fig
    ax1, ax2 = fig.subplots(1, 2)
    _memory_panel(ax1, view)
    _tpot_panel(ax2, view)
    fig.suptitle(f"{view['model']} ({view['precision']}) on {view['gpus']} × {view['gpu']}",
                 fontsize=10)
    fig.tight_layout()
    return fig


MAX_GPU_BARS = 16
MEMORY_PARTS = (("weights_bytes", "#4c72b0", "weights"),
                ("activation_reserve_bytes", "#999999", "activations + runtime"),
                ("kv_used_bytes", "#dd8452", "KV in use"),
                ("kv_unused_bytes", "#f3c9a8", "KV free"))


class _Plot:
    """The widget's figure, made once: per-GPU memory bars (left) and the TPOT parts at every TP
    of :data:`TP_CHOICES` (right); an update sets the bars' heights, the lines, the tick labels
    and the limits. Legends are drawn once above the panels; the titles go in
    :func:`summary_html`. An impossible layout shows only its message (a second background)."""

    def __init__(self) -> None:
        from vidya_lab.widgets._blit import Frames

        self.fig = Figure(figsize=(10, 3.8))
        self.ax1, self.ax2 = self.fig.subplots(1, 2)
        ax1, ax2 = self.ax1, self.ax2
        xs = range(MAX_GPU_BARS)
        self.mem = {key: ax1.bar(xs, [0.0] * MAX_GPU_BARS, color=color, label=label).patches
                    for key, color, label in MEMORY_PARTS}
        self.hbm = ax1.axhline(0.0, color="black", lw=1.5, label="HBM")
        self.usable = ax1.axhline(0.0, color="black", ls="--", lw=1, label="usable (rule)")
        ax1.set_ylabel("GB per GPU")
        ax1.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
                   frameon=False)
        txs = range(len(TP_CHOICES))
        self.tpot = {key: ax2.bar(txs, [0.0] * len(TP_CHOICES), color=PART_COLORS[key],
                                  label=PART_LABELS[key]).patches for key in layouts.TPOT_PARTS}
        ax2.set_xticks(list(txs))
        ax2.set_xlim(-0.6, len(TP_CHOICES) - 0.4)
        ax2.set_ylabel("TPOT (ms per token)")
        ax2.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
                   frameon=False)
        self.note = ax2.text(0.0, 0.0, "", ha="center", va="bottom", fontsize=8)
        self.message = self.fig.text(0.5, 0.5, "", ha="center", va="center", wrap=True,
                                     fontsize=10)
        self.fig.subplots_adjust(left=0.06, right=0.99, bottom=0.2, top=0.84, wspace=0.2)
        bars = [b for part in self.mem.values() for b in part] \
            + [b for part in self.tpot.values() for b in part]
        self.dynamic = [ax1.xaxis, ax1.yaxis, ax2.xaxis, ax2.yaxis, *bars, self.hbm,
                        self.usable, self.note]
        self.frames = Frames(self.fig, self.dynamic, dpi=72)

    def _show(self, ok: bool) -> None:
        self.ax1.set_visible(ok)
        self.ax2.set_visible(ok)
        self.message.set_visible(not ok)
        for artist in self.dynamic:
            artist.set_visible(ok)

    def png(self, view: dict) -> bytes:
        """The widget's frame for ``view``, PNG bytes."""
        if view["error"]:
            self._show(False)
            self.message.set_text("impossible layout: " + view["error"])
            self.frames._backgrounds.pop("error", None)  # the message is part of it
            return self.frames.png("error")
        self._show(True)
        gb = 1e9
        mem = view["memory"]
        n = min(view["gpus"], MAX_GPU_BARS)
        bottom = 0.0
        for key, _, _ in MEMORY_PARTS:
            h = mem[key] / gb
            for i, bar in enumerate(self.mem[key]):
                bar.set_y(bottom)
                bar.set_height(h)
                bar.set_visible(i < n)
            bottom += h
        self.hbm.set_ydata([mem["hbm_bytes"] / gb] * 2)
        self.usable.set_ydata([view["usable_bytes"] / gb] * 2)
        self.ax1.set_ylim(0, max(mem["hbm_bytes"] / gb, bottom) * 1.1)
        self.ax1.set_xlim(-0.6, n - 0.4)
        self.ax1.set_xticks(range(n), [str(i) for i in range(n)], fontsize=7)
        self.ax1.set_xlabel("GPU of the replica" + (" (first 16)" if view["gpus"] > n else ""))
        rows = {row["tp"]: row for row in view["sweep"]}
        top, labels = 0.0, []
        for j, tp in enumerate(TP_CHOICES):
            row = rows.get(tp)
            low = 0.0
            for key in layouts.TPOT_PARTS:
                h = row[key] * 1e3 if row else 0.0
                bar = self.tpot[key][j]
                bar.set_y(low)
                bar.set_height(h)
                low += h
            top = max(top, low)
            labels.append(f"TP{tp}" + ("\n(no layout)" if row is None else
                                       "" if row["fits"] else "\n(no fit)"))
        self.ax2.set_xticks(range(len(TP_CHOICES)), labels, fontsize=8)
        sel = TP_CHOICES.index(view["tp"]) if view["tp"] in TP_CHOICES else None
        for j, label in enumerate(self.ax2.get_xticklabels()):
            label.set_fontweight("bold" if j == sel else "normal")
        self.ax2.set_ylim(0, max(top, 1e-3) * 1.12)
        total = view["parts"]["total_s"] * 1e3
        self.note.set_position((sel if sel is not None else 0, total))
        self.note.set_text(f"{total:.1f} ms")
        return self.frames.png("ok")


def summary_html(view: dict) -> str:
    """What the figure's titles said, as HTML under the widget's figure."""
    if view["error"]:
        return f"<p>{view['model']} on {view['gpu']}: impossible layout.</p>"
    mem = view["memory"]
    verdict = "fits" if view["fits"] else "does <b>not</b> fit"
    return (f"<p><b>{view['model']} ({view['precision']}) on {view['gpus']} × {view['gpu']}</b>: "
            f"TP{view['tp']}×PP{view['pp']}, {mem['weights_bytes'] / 1e9:.1f} GB weights per GPU "
            f"(GB = 1e9 bytes), {verdict}; KV in use: {mem['sequences']} sequences.<br>"
            f"One decode step (right), batch {view['batch']}, {view['context_tokens']:,} tokens of "
            f"context, PP{view['pp']}, {view['link_name']}: "
            f"{view['parts']['total_s'] * 1e3:.1f} ms at TP{view['tp']}.</p>")


def build():
    """The widget: drop-downs for model, GPU, TP, PP, interconnect, precision and batch."""
    import ipywidgets as widgets

    style = {"description_width": "8em"}
    layout = widgets.Layout(width="20em")

    def dropdown(options, value, description):
        return widgets.Dropdown(options=options, value=value, description=description,
                                style=style, layout=layout)

    controls = [
        dropdown(list(catalog.MODELS), TANVI.model_id, "model"),
        dropdown(list(catalog.GPUS), "h100-sxm", "GPU"),
        dropdown(list(TP_CHOICES), 4, "TP"),
        dropdown(list(PP_CHOICES), 1, "PP"),
        dropdown(list(INTERCONNECT_CHOICES), "native", "interconnect"),
        dropdown(list(PRECISION_CHOICES), "bf16", "precision"),
        dropdown(list(BATCH_CHOICES), 32, "batch"),
    ]
    plot = _Plot()
    # the figure: one PNG, replaced on every change, shown at its own width (not stretched)
    out = widgets.Image(format="png", layout=widgets.Layout(
        width=f"{plot.frames.width_px}px", max_width="100%"))
    text = widgets.HTML()

    def update(_change=None):
        view = compute_view(*(c.value for c in controls))
        out.value = plot.png(view)
        text.value = summary_html(view)

    for c in controls:
        c.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox([widgets.VBox(controls[:4]), widgets.VBox(controls[4:])]),
                         out, text])
