"""Chapter 3's figures and tables: how a model splits over GPUs, drawn from the package's numbers.

No number here is typed by hand: the schematic's layers, heads and bytes come from
:mod:`vidya_lab.parallelism` and the catalog, the timelines from :func:`vidya_lab.layouts.pipeline_schedule`,
the tables from :func:`vidya_lab.layouts.tpot_parts` and :class:`vidya_lab.sizing.Replica`, the
practice figure from :mod:`vidya_lab.experts`. The chapter's cells call these and display them.

* :func:`split_schematic` — which GPU holds which layers and heads under TP × PP, where the
  all-reduces and the hand-offs happen.
* :func:`pipeline_timeline` — one token round through the pipeline stages: the bubble.
* :func:`cost_vs_tpot` — the cheapest fleet's price against the TPOT target.
* :func:`practice_figure` — MoE traffic (EP vs TP) and what a long upload and the subjects' adapters
  take from the KV cache.
* :func:`memory_table`, :func:`tp_step_table`, :func:`layout_table` — the chapter's tables
  (pandas DataFrames; at most six columns, units in the headers).
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from vidya_lab import _validate as v
from vidya_lab import catalog, experts, layouts, sizing
from vidya_lab import parallelism as par

GB = 1e9
_BOX, _RED, _GREEN, _GREY = "#dbe6f4", "#c44e52", "#55a868", "#bbbbbb"


# ----------------------------------------------------------------------------- the schematic

def _gpu_box(ax, x, y, w, h, text):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=_BOX, edgecolor="#4c72b0", lw=1.2))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=8.5)


def _stage_layers(m, pp: int, s: int) -> tuple[int, int]:
    ls = par.layers_per_stage(m, pp)
    return s * ls + 1, min((s + 1) * ls, m.n_layers)


_W, _H, _GAP, _COL = 3.2, 1.45, 0.3, 2.1  # GPU box width and height, row gap, column gap


def _extent(tp: int, pp: int) -> tuple[float, float]:
    """Width and depth below the first row of a panel, in the schematic's units."""
    return pp * (_W + _COL) - _COL + 0.7, (tp - 1) * (_H + _GAP) + 0.8


def _split_panel(ax, m, tp: int, pp: int, precision: str, depth: float) -> None:
    par.check_layout(m, tp, pp)
    w, h, gap, col = _W, _H, _GAP, _COL
    heads, kv = m.n_heads // tp, par.kv_heads_per_gpu(m, tp)
    bottom = -(tp - 1) * (h + gap)
    for s in range(pp):
        x = s * (w + col)
        first, last = _stage_layers(m, pp, s)
        for i in range(tp):
            _gpu_box(ax, x, -i * (h + gap), w, h, f"GPU {s * tp + i}\nlayers {first}–{last}\n"
                     f"{heads} of {m.n_heads} query heads, {kv} KV\n1/{tp} of every MLP")
        if tp > 1:  # the TP group of this stage: all-reduces after attention and after the MLP
            ax.plot([x + w + 0.12] * 2, [bottom, h], color=_RED, lw=3)
            ax.text(x + w / 2, bottom - 0.2, f"{par.ALLREDUCES_PER_LAYER} all-reduces per layer, "
                    f"{par.ALLREDUCES_PER_LAYER * (last - first + 1)} a step", color=_RED,
                    ha="center", va="top", fontsize=8.5)
        if s + 1 < pp:  # the hand-off to the next stage: one activation per token
            mid = (h + bottom) / 2
            ax.add_patch(FancyArrowPatch((x + w + 0.3, mid), (x + w + col - 0.1, mid),
                                         arrowstyle="-|>", mutation_scale=14, color=_GREEN, lw=1.8))
            ax.text(x + w + (col + 0.2) / 2, mid + 0.15, f"hand-off\n{m.d_model * 2:,} B\na token",
                    color=_GREEN, ha="center", va="bottom", fontsize=8.5)
    gb = par.weight_params_per_gpu(m, tp, pp) * catalog.bytes_per_element(precision) / GB
    ax.set_title(f"TP{tp} × PP{pp}: {gb:.1f} GB of {precision} weights\non the fullest GPU",
                 fontsize=10)
    ax.set_xlim(-0.2, _extent(tp, pp)[0] - 0.2)
    ax.set_ylim(-depth, h + 0.2)
    ax.axis("off")


def split_schematic(model, splits=((4, 1), (2, 2)), precision: str = "bf16") -> Figure:
    """Side by side, one panel per (tp, pp) in ``splits``: every GPU with the layers, heads and MLP
    share it holds, each stage's all-reduces (red) and the hand-offs between stages (green)."""
    m = catalog.get_model(model)
    splits = [(v.check_int("tp", tp, minimum=1, maximum=16), v.check_int("pp", pp, minimum=1,
                                                                         maximum=8))
              for tp, pp in splits]
    widths = [_extent(tp, pp)[0] for tp, pp in splits]
    depth = max(_extent(tp, pp)[1] for tp, pp in splits)
    fig = Figure(figsize=(min(10.0, 0.95 * sum(widths)), 1.0 + 0.75 * (depth + _H)))
    axes = fig.subplots(1, len(splits), squeeze=False, gridspec_kw={"width_ratios": widths})[0]
    for ax, (tp, pp) in zip(axes, splits, strict=True):
        _split_panel(ax, m, tp, pp, precision, depth)
    fig.suptitle(f"{m.name}: {m.n_layers} layers, {m.n_heads} query heads, {m.n_kv_heads} KV heads",
                 fontsize=10)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- the bubble

def _timeline_panel(ax, r: sizing.Replica, batch: int, context_tokens: int, m: int) -> None:
    s = layouts.pipeline_schedule(r, batch, context_tokens, m)
    st, tpot, p = s["stage_s"] * 1e3, s["tpot_s"] * 1e3, r.pp
    host = max(0.0, tpot - p * st)  # the host's scheduling and the hand-offs of the round
    ax.barh(p, host, left=0, color=_GREY, height=0.6)
    for stage in range(p):
        for j in range(m):  # micro-batch j meets stage `stage` in slot (stage + j) mod p
            left = host + ((stage + j) % p) * st
            ax.barh(stage, st, left=left, color=f"C{j}", height=0.6, edgecolor="white")
            ax.text(left + st / 2, stage, f"{j + 1}", ha="center", va="center", fontsize=7,
                    color="white")
    ax.set_yticks(range(p + 1), [f"stage {i + 1}" for i in range(p)] + ["host"], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, tpot)
    ax.set_xlabel("time within one token round (ms)")
    ax.set_title(f"batch {batch}, {m} micro-batch{'es' if m > 1 else ''}: each stage idle "
                 f"{s['idle_fraction']:.0%}", fontsize=9)


def pipeline_timeline(r: sizing.Replica, cases=((1, 1), (64, None)),
                      context_tokens: int = 3900) -> Figure:
    """One token round of ``r``'s pipeline for each (batch, micro-batches) in ``cases`` (None:
    as many micro-batches as stages): which stage works on which micro-batch when, and the idle
    gaps (the bubble). Stage and round times are :func:`vidya_lab.layouts.pipeline_schedule`'s."""
    v.check_instance("r", r, sizing.Replica, "sizing.Replica")
    fig = Figure(figsize=(10, 2.2 + 0.35 * r.pp))
    axes = fig.subplots(1, len(cases), squeeze=False)[0]
    for ax, (batch, m) in zip(axes, cases, strict=True):
        m = min(r.pp, batch) if m is None else v.check_int("microbatches", m, minimum=1,
                                                           maximum=r.pp)
        _timeline_panel(ax, r, batch, context_tokens, m)
    fig.suptitle(f"{r.model.name} ({r.precision}) on TP{r.tp} × PP{r.pp}, {r.gpu.id}: "
                 "numbered bars are micro-batches, grey is the host", fontsize=9)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- the price of speed

def cost_vs_tpot(sweep: list[dict], title: str = "") -> Figure:
    """Step plot of the cheapest fleet's USD per hour against the TPOT target, the TP × PP split
    named wherever a new one becomes cheapest. ``sweep``: :func:`vidya_lab.layouts.cost_vs_tpot_target`."""
    pts = [(r["tpot_target_s"] * 1e3, r["cost_per_hour"], r["layout"]) for r in sweep
           if r["layout"] is not None]
    fig = Figure(figsize=(8, 3.4))
    ax = fig.subplots()
    ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", color="#4c72b0")
    previous = None
    for x, y, lay in pts:
        split = f"TP{lay.tp}×PP{lay.pp}"
        if split != previous:
            ax.annotate(split, (x, y), textcoords="offset points", xytext=(2, 5), fontsize=8)
            previous = split
    ax.set_xlabel("TPOT target (ms per token)")
    ax.set_ylabel("cheapest fleet (USD per hour)")
    ax.set_ylim(0, None)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- practice topic

def practice_figure(moe_model: str, n: int, r: sizing.Replica, upload_tokens: int, adapters: int,
                    rank: int, typical_tokens: int, tokens=(1, 16, 256, 4096, 65536)) -> Figure:
    """Left: one MoE layer's exchange per iteration, EP vs TP over ``n`` GPUs on NVLink and on
    InfiniBand, against the tokens in the iteration (:func:`vidya_lab.experts.moe_exchange`).
    Right: the share of one GPU's KV budget of ``r`` that one ordinary conversation, one upload and
    the resident adapters take (:func:`~vidya_lab.experts.long_context_kv`,
    :func:`~vidya_lab.experts.adapter_budget`)."""
    fig = Figure(figsize=(10, 3.6))
    ax1, ax2 = fig.subplots(1, 2)
    for link, style in (("nvlink4", "-"), ("infiniband-ndr", "--")):
        rows = [experts.moe_exchange(moe_model, t, n, link) for t in tokens]
        name = catalog.get_link(link).name.split(" (")[0].split(",")[0]
        ax1.plot(tokens, [x["tp_time_s"] * 1e6 for x in rows], style, color=_RED, marker="o",
                 ms=3, label=f"TP{n}: 2 all-reduces, {name}")
        ax1.plot(tokens, [x["ep_time_s"] * 1e6 for x in rows], style, color="#4c72b0", marker="o",
                 ms=3, label=f"EP{n}: dispatch + combine, {name}")
    ax1.set(xscale="log", yscale="log", xlabel="tokens in the iteration (whole replica)",
            ylabel="µs per MoE layer")
    ax1.set_title(f"{catalog.get_model(moe_model).name}: traffic of one MoE layer", fontsize=9)
    ax1.legend(fontsize=7)
    conv = experts.long_context_kv(r, typical_tokens)["share_of_budget"]
    up = experts.long_context_kv(r, upload_tokens)["share_of_budget"]
    ad = experts.adapter_budget(r, adapters, rank)["share_of_budget"]
    labels = [f"one conversation\n({typical_tokens:,} tokens)", f"one upload\n({upload_tokens:,} "
              "tokens)", f"{adapters} adapters\n(rank {rank})"]
    ax2.barh(labels, [100 * conv, 100 * up, 100 * ad], color=["#dd8452", _RED, "#8172b3"])
    ax2.invert_yaxis()
    ax2.set_xlabel("% of one GPU's KV-cache budget")
    ax2.set_title(f"{r.model.name} on TP{r.tp} × {r.gpu.id}: who takes the KV cache", fontsize=9)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- tables

def memory_table(model, gpu: str, context_tokens: int, tps=(1, 2, 4, 8, 16),
                 precision: str = "bf16"):
    """Per TP degree: weights, KV bytes per token and KV budget per GPU, and the conversations of
    ``context_tokens`` that fit (0 when the weights leave no room)."""
    import pandas as pd

    rows = []
    for tp in tps:
        r = sizing.Replica(model, gpu, tp=tp, precision=precision)
        rows.append({"TP": tp, "weights per GPU (GB)": r.weights_bytes_per_gpu / GB,
                     "KV per token per GPU (bytes)": r.kv_bytes_per_token_per_gpu,
                     "KV budget per GPU (GB)": max(0.0, r.kv_budget_bytes) / GB,
                     "conversations that fit": sizing.max_concurrent_sequences(r, context_tokens)
                     if r.weights_fit else 0})
    return pd.DataFrame(rows)


def tp_step_table(model, gpu: str, batch: int, context_tokens: int, tps=(1, 2, 4, 8, 16),
                  precision: str = "bf16"):
    """One decode step per TP degree (ms): memory reads (with any compute beyond them), the
    all-reduces, the fixed costs (per layer and per step), the TPOT and the speed-up over the first."""
    import pandas as pd

    rows = []
    for tp in tps:
        r = sizing.Replica(model, gpu, tp=tp, precision=precision)
        p = layouts.tpot_parts(r, batch, context_tokens)
        rows.append({"TP": f"TP{tp}" + ("" if r.weights_fit else " (no fit)"),
                     "reads (ms)": 1e3 * (p["weights_read_s"] + p["kv_read_s"]
                                          + p["compute_beyond_memory_s"]),
                     "all-reduces (ms)": 1e3 * p["communication_s"],
                     "fixed costs (ms)": 1e3 * (p["layer_overhead_s"] + p["overhead_s"]),
                     "TPOT (ms)": 1e3 * p["total_s"]})
    t = pd.DataFrame(rows)
    t["speed-up"] = t["TPOT (ms)"].iloc[0] / t["TPOT (ms)"]
    return t


def label(layout) -> str:
    """A layout's label for a table cell, kept on one line: ``"TP4×PP1 ×29"``, "-" for None."""
    return "-" if layout is None else layout.label.replace(" ", "\u00a0")


def layout_table(found, n: int = 10):
    """The first ``n`` layouts of a search: label, GPUs, USD/hour, idle TTFT, TPOT, batch."""
    import pandas as pd

    return pd.DataFrame([{"layout": label(x), "GPUs": x.gpus, "USD/hour": x.cost_per_hour,
                          "TTFT (ms)": x.ttft_s * 1e3, "TPOT (ms)": x.tpot_s * 1e3,
                          "batch per replica": x.batch_per_replica} for x in found[:n]])


def styled(table, formats=None, na_rep: str | None = None):
    """A chapter table as the page shows it: ``formats`` (a format string, or a dict of them by
    column), no index, and room between the columns."""
    return (table.style.format(formats, na_rep=na_rep).hide(axis="index")
            .set_table_styles([{"selector": "th, td", "props": "padding: 0.15em 0.8em"}]))
