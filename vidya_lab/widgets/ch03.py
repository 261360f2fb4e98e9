"""Chapter 3 widget: pick a model, GPU, TP, PP and interconnect; see per-GPU memory and TPOT parts.

No math here: memory comes from :func:`vidya_lab.sizing.memory_breakdown`, the TPOT parts from
:func:`vidya_lab.layouts.tpot_parts` (the one cost model). :func:`compute_view` (numbers) and
:func:`draw` (a matplotlib figure) are plain functions that tests call without a browser;
:func:`build` wires them to drop-downs.
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
               "communication_s": "communication", "overhead_s": "engine overhead"}
PART_COLORS = {"weights_read_s": "#4c72b0", "kv_read_s": "#dd8452",
               "compute_beyond_memory_s": "#8172b3", "communication_s": "#c44e52",
               "overhead_s": "#999999"}


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
    view["usable_bytes"] = (r.memory_fraction * r.gpu.hbm_bytes if r.memory_rule == "vllm"
                            else r.gpu.hbm_bytes)
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


def build():
    """The widget: drop-downs for model, GPU, TP, PP, interconnect, precision and batch."""
    import ipywidgets as widgets
    from IPython.display import display

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
    out = widgets.Output()

    def update(_change=None):
        model, gpu, tp, pp, link, precision, batch = (c.value for c in controls)
        fig = draw(compute_view(model, gpu, tp, pp, link, precision, batch))
        out.clear_output(wait=True)
        with out:
            display(fig)

    for c in controls:
        c.observe(update, names="value")
    update()
    return widgets.VBox([widgets.HBox([widgets.VBox(controls[:4]), widgets.VBox(controls[4:])]),
                         out])
