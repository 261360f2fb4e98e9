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


def draw(view: dict, fig: Figure | None = None) -> Figure:
    """Left: one GPU's memory as a stacked bar. Right: TPOT and tokens/s against batch."""
    fig = fig or Figure(figsize=(9.5, 3.6))
    fig.clear()
    ax_mem, ax_lat = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2.4]})
    if "memory" in view:
        m = view["memory"]
        parts = [("weights", m["weights_bytes"], "#4c72b0"),
                 ("activations + runtime", m["activation_reserve_bytes"], "#8c8c8c"),
                 (f"KV in use ({m['sequences']} seqs)", m["kv_used_bytes"], "#dd8452"),
                 ("KV free", m["kv_unused_bytes"], "#f3c9a8"),
                 ("not allotted", m["unallocated_bytes"], "#e8e8e8")]
        bottom = 0.0
        for label, value, color in parts:
            ax_mem.bar(0, value / 1e9, bottom=bottom, color=color, label=label, width=0.6)
            bottom += value / 1e9
        ax_mem.axhline(m["hbm_bytes"] / 1e9, color="black", lw=1, ls="--")
        ax_mem.set_ylim(0, max(bottom, m["hbm_bytes"] / 1e9) * 1.05)
        ax_mem.set_xticks([])
        ax_mem.set_ylabel("GB per GPU")
        ax_mem.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.02), frameon=False)
    ax_mem.set_title(f"{view['gpu_id']} memory", fontsize=9)
    if not view["ok"]:
        ax_lat.text(0.5, 0.5, view["message"], ha="center", va="center", wrap=True, fontsize=9,
                    transform=ax_lat.transAxes)
        ax_lat.set_axis_off()
        fig.tight_layout()
        return fig
    b, tpot, tput, tpot_bound = (np.array(c, dtype=float) for c in zip(*view["curve"], strict=True))
    ax_lat.plot(b, tpot * 1e3, color="#c44e52", marker=".", label="TPOT, calibrated")
    ax_lat.plot(b, tpot_bound * 1e3, color="#c44e52", ls=":", label="TPOT, physical bound")
    ax_lat.set_xscale("log", base=2)
    ax_lat.set_xlabel("decode batch (sequences)")
    ax_lat.set_ylabel("TPOT (ms)", color="#c44e52")
    ax2 = ax_lat.twinx()
    ax2.plot(b, tput, color="#55a868", marker=".", label="tokens/s")
    ax2.set_ylabel("output tokens/s (replica)", color="#55a868")
    crit = view["critical_batch"]
    if np.isfinite(crit) and crit <= b.max():
        ax_lat.axvline(crit, color="black", ls="--", lw=1, label=f"critical batch {crit:.0f}")
    ax_lat.axvline(view["batch_used"], color="#4c72b0", lw=1, label=f"batch {view['batch_used']}")
    ax_lat.legend(fontsize=7, loc="upper left")
    crit_text = "memory-bound at any batch" if not np.isfinite(crit) else f"critical batch {crit:.0f}"
    ax_lat.set_title(f"{view['model_id']}, tp={view['tp']}, {view['precision']}, "
                     f"{view['context_tokens']} tokens: TPOT {view['tpot_s'] * 1e3:.1f} ms, "
                     f"{view['tokens_per_s']:,.0f} tokens/s ({crit_text})", fontsize=8)
    fig.tight_layout()
    return fig


def draw_memory_bars(replicas, context_tokens: int, labels=None, fig: Figure | None = None) -> Figure:
    """Stacked bars of one GPU's memory for several replicas, each holding as many
    ``context_tokens``-token sequences as fit (:func:`sizing.memory_breakdown`)."""
    fig = fig or Figure(figsize=(7.5, 3.4))
    fig.clear()
    ax = fig.subplots()
    labels = labels or [f"{r.gpu.id} tp={r.tp} {r.precision}" for r in replicas]
    colors = {"weights": "#4c72b0", "activations + runtime": "#8c8c8c", "KV cache": "#dd8452",
              "not allotted": "#e8e8e8"}
    for i, r in enumerate(replicas):
        m = sizing.memory_breakdown(r, int(context_tokens))
        parts = (("weights", m["weights_bytes"]), ("activations + runtime",
                 m["activation_reserve_bytes"]), ("KV cache", m["kv_budget_bytes"]),
                 ("not allotted", m["unallocated_bytes"]))
        bottom = 0.0
        for name, value in parts:
            ax.bar(i, value / 1e9, bottom=bottom, color=colors[name], width=0.6,
                   label=name if i == 0 else None)
            bottom += value / 1e9
        ax.hlines(m["hbm_bytes"] / 1e9, i - 0.4, i + 0.4, colors="black", linestyles="--", lw=1,
                  label="GPU memory" if i == 0 else None)
        top = max(bottom, m["hbm_bytes"] / 1e9)
        text = f"{m['max_sequences']} seqs" if r.weights_fit else "does not fit"
        ax.text(i, top * 1.01, text, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(replicas)), labels, fontsize=8)
    ax.set_ylabel("GB per GPU")
    ax.set_title(f"one GPU's memory, and the {context_tokens}-token sequences its replica holds",
                 fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_ylim(0, ax.get_ylim()[1] * 1.08)
    fig.tight_layout()
    return fig


def build():
    """The widget: model, GPU, tp, precision, context and batch; the figure below."""
    import io

    import ipywidgets as widgets
    from IPython.display import Image, display

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
    out = widgets.Output()
    controls = (model, gpu, tp, precision, context, batch)

    def update(_change=None):
        view = compute_view(model.value, gpu.value, tp.value, precision.value, context.value,
                            batch.value)
        fig = draw(view)
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=90)
        out.clear_output(wait=True)
        with out:  # a PNG, whatever matplotlib backend the kernel runs
            display(Image(data=png.getvalue(), format="png"))

    for w in controls:
        w.observe(update, names="value")
    update()
    return widgets.VBox([*controls, out])
