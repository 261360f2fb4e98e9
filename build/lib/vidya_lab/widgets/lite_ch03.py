"""Chapter 3, light: how a model splits over GPUs, in plain HTML (no numpy, no matplotlib).

The chapter's main widget (:mod:`vidya_lab.widgets.ch03`) draws with matplotlib. This one answers the
chapter's first question, "does it fit, and what does splitting cost?", with the parallelism
arithmetic alone (:mod:`vidya_lab.parallelism` and :mod:`vidya_lab.catalog`, which need neither
numpy nor matplotlib), so it works in the reader's browser (JupyterLite) even before, or without,
the Pyodide CDN's numpy. No math here: :func:`compute_view` asks the package, :func:`summary_html`
shows it, :func:`build` wires both to sliders and drop-downs; tests call the first two directly.
"""

from __future__ import annotations

import html

from vidya_lab import _validate as v
from vidya_lab import catalog, sizing
from vidya_lab import parallelism as par
from vidya_lab.scenario import TANVI

TP_CHOICES = (1, 2, 4, 8, 16)
PP_CHOICES = (1, 2, 4, 8)
PRECISION_CHOICES = ("bf16", "fp8", "int4")
MICROBATCHES = 4  # GPipe's one-pass bubble is given for this many micro-batches
#: Context of each decoding sequence: Tanvi's mean prompt and half her mean answer, tokens.
CONTEXT_TOKENS = TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean // 2


def compute_view(model: str = TANVI.model_id, gpu: str = "h100-sxm", tp: int = 4, pp: int = 1,
                 precision: str = "bf16", batch: int = 32) -> dict:
    """What the widget shows, as numbers (bytes, seconds; GB below means 1e9 bytes).

    Returns weights per GPU (``weights_bytes_per_gpu`` = parameters on the fullest GPU × bytes per
    parameter), the GPU's memory, the share of it the weights take, KV heads per GPU and their
    replication, the TP all-reduce time of one decode step of ``batch`` tokens, the share of a
    decode step the pipeline stages sit idle for a lone request (``lone_request_idle``) and at
    ``batch`` (``pipeline_idle``), as the cost model runs the pipeline (micro-batches of the
    batch), and GPipe's one-pass bubble with :data:`MICROBATCHES` micro-batches
    (``pipeline_bubble``, (p − 1)/(m + p − 1)).
    """
    m = catalog.get_model(model)
    g = catalog.get_gpu(gpu)
    batch = v.check_int("batch", batch, minimum=1, maximum=4096)
    par.check_layout(m, tp, pp)
    weights = par.weight_params_per_gpu(m, tp, pp) * catalog.bytes_per_element(precision)
    r = sizing.Replica(m, g, tp=tp, pp=pp, precision=precision)

    def idle(sequences: int) -> float:
        return sizing.iteration_breakdown(r, decode_contexts=[CONTEXT_TOKENS] * sequences)[
            "idle_fraction"] if pp > 1 else 0.0

    return {
        "model": m.name, "gpu": g.name, "tp": tp, "pp": pp, "gpus": tp * pp,
        "precision": precision, "batch": batch,
        "weights_bytes_per_gpu": weights, "hbm_bytes": g.hbm_bytes,
        "weights_share_of_hbm": weights / g.hbm_bytes,
        "weights_fit": weights < g.hbm_bytes,
        "kv_heads_per_gpu": par.kv_heads_per_gpu(m, tp),
        "kv_replication": par.kv_replication(m, tp),
        "tp_comm_s_per_decode_step": par.tp_comm_time_s(m, g, tp, pp, batch),
        "pipeline_bubble": par.pipeline_bubble_fraction(pp, MICROBATCHES),
        "lone_request_idle": idle(1), "pipeline_idle": idle(batch),
    }


def summary_html(view: dict) -> str:
    """The view as a small HTML table (what the widget's output area shows)."""
    fit = "fit" if view["weights_fit"] else "do NOT fit"
    rows = [
        ("GPUs in the replica", f"{view['gpus']} ({view['tp']} TP × {view['pp']} PP)"),
        ("weights per GPU", f"{view['weights_bytes_per_gpu'] / 1e9:.1f} GB of "
                            f"{view['hbm_bytes'] / 1e9:.0f} GB ({view['weights_share_of_hbm']:.0%}): "
                            f"they {fit}"),
        ("KV heads per GPU", f"{view['kv_heads_per_gpu']} (stored {view['kv_replication']:.0f}×)"),
        ("TP all-reduces per decode step", f"{view['tp_comm_s_per_decode_step'] * 1e3:.2f} ms "
                                           f"at batch {view['batch']}"),
        ("pipeline stages idle, a lone request", f"{view['lone_request_idle']:.0%}"),
        (f"pipeline stages idle at batch {view['batch']}", f"{view['pipeline_idle']:.0%}"),
    ]
    body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                   f"<td>{html.escape(val)}</td></tr>" for k, val in rows)
    title = html.escape(f"{view['model']} on {view['gpu']}, {view['precision']}")
    return f"<div class='vidya-lite'><b>{title}</b><table>{body}</table></div>"


def update(out, model: str, gpu: str, tp: int, pp: int, precision: str, batch: int) -> None:
    """The widgets' callback: refresh ``out`` (an ``ipywidgets.HTML``); a bad layout says why."""
    try:
        out.value = summary_html(compute_view(model, gpu, tp, pp, precision, batch))
    except ValueError as exc:
        out.value = f"<div class='vidya-lite'>⚠️ {html.escape(str(exc))}</div>"


def build(model: str = TANVI.model_id, gpu: str = "h100-sxm"):
    """Sliders for TP, PP and batch, drop-downs for GPU and precision; returns the widget box."""
    import ipywidgets as w

    tp = w.SelectionSlider(options=TP_CHOICES, value=4, description="TP")
    pp = w.SelectionSlider(options=PP_CHOICES, value=1, description="PP")
    batch = w.IntSlider(value=32, min=1, max=256, description="batch")
    gpus = w.Dropdown(options=list(TANVI.candidate_gpu_ids), value=gpu, description="GPU")
    precision = w.Dropdown(options=PRECISION_CHOICES, value="bf16", description="precision")
    out = w.HTML()
    controls = (gpus, precision, tp, pp, batch)

    def refresh(_change=None):
        update(out, model, gpus.value, tp.value, pp.value, precision.value, batch.value)

    for control in controls:
        control.observe(refresh, names="value")
    refresh()
    return w.VBox([w.HBox([gpus, precision]), tp, pp, batch, out])
