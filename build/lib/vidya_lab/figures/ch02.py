"""Chapter 2's schematics, drawn from the package's numbers (nothing typed by hand).

* :func:`memory_bars` — one GPU's memory as the device reports it, for several replicas: weights,
  the runtime's reserve, the activations of a full token budget, the KV budget the engine's rule
  leaves and what it leaves unused, against the reported total and the datasheet's figure
  (:func:`vidya_lab.sizing.memory_breakdown`).
* :func:`cycle_figure` — the steady cycle of a busy replica: what one iteration of each kind
  carries, and how the cycle's time splits between them (:func:`vidya_lab.sizing.cycle`).

Each returns a matplotlib :class:`~matplotlib.figure.Figure` (no pyplot state), so tests draw
them without a display.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from vidya_lab import sizing
from vidya_lab._validate import check_int
from vidya_lab.sizing.memory import activation_bytes_per_gpu

#: The parts of one GPU's memory, bottom to top: (legend label, colour).
MEMORY_PARTS = (("weights", "#4c72b0"), ("runtime reserve", "#55a868"),
                ("activations", "#8c8c8c"), ("KV cache budget", "#dd8452"),
                ("left unused by the rule", "#e8e8e8"))
#: Most replicas one memory figure draws side by side.
MAX_BARS = 12


def memory_parts(r: sizing.Replica, context_tokens: int) -> dict:
    """One GPU's memory in the order :data:`MEMORY_PARTS` stacks it, bytes, with the totals.

    The runtime reserve and the activations are the two halves of the replica's
    ``activation_reserve_bytes``; the KV budget and the unused rest come from
    :func:`vidya_lab.sizing.memory_breakdown` (which also gives ``max_sequences``).
    """
    m = sizing.memory_breakdown(r, context_tokens)
    act = activation_bytes_per_gpu(r.model, r.tp, r.max_batched_tokens)
    values = (m["weights_bytes"], m["activation_reserve_bytes"] - act, act, m["kv_budget_bytes"],
              m["unallocated_bytes"])
    return {"parts": dict(zip((name for name, _ in MEMORY_PARTS), values, strict=True)),
            "hbm_bytes": m["hbm_bytes"], "hbm_marketing_bytes": m["hbm_marketing_bytes"],
            "usable_bytes": m["usable_bytes"], "max_sequences": m["max_sequences"],
            "fits": r.weights_fit}


def _label(r: sizing.Replica) -> str:
    rule = {"vllm": "vLLM", "trtllm": "TRT-LLM"}[r.memory_rule]
    return f"TP {r.tp}, {r.precision}\n{rule} rule"


def memory_bars(replicas, context_tokens: int, labels=None, fig: Figure | None = None) -> Figure:
    """Stacked bars of one GPU's memory, one per replica, each holding as many
    ``context_tokens``-token conversations as fit (the count is written above the bar).

    The solid line is the total the device reports (what engines budget from), the dotted one the
    datasheet's decimal figure; under vLLM's rule a dash marks the share it lets itself use.
    """
    replicas = list(replicas)
    check_int("number of replicas", len(replicas), minimum=1, maximum=MAX_BARS)
    ctx = check_int("context_tokens", context_tokens, minimum=1, maximum=10_000_000)
    labels = list(labels) if labels is not None else [_label(r) for r in replicas]
    fig = fig or Figure(figsize=(8.5, 3.8))
    fig.clear()
    ax = fig.subplots()
    top = 0.0
    for i, r in enumerate(replicas):
        m = memory_parts(r, ctx)
        bottom = 0.0
        for name, colour in MEMORY_PARTS:
            value = m["parts"][name] / 1e9
            ax.bar(i, value, bottom=bottom, color=colour, width=0.55, label=name if i == 0 else None)
            bottom += value
        first = i == 0
        ax.hlines(m["hbm_bytes"] / 1e9, i - 0.38, i + 0.38, colors="black", lw=1.2,
                  label="reported by the device" if first else None)
        ax.hlines(m["hbm_marketing_bytes"] / 1e9, i - 0.38, i + 0.38, colors="black", lw=1,
                  linestyles=":", label="datasheet figure" if first else None)
        if r.memory_rule == "vllm":
            ax.hlines(m["usable_bytes"] / 1e9, i - 0.38, i + 0.38, colors="#c44e52", lw=1,
                      linestyles="--", label="vLLM's share (utilisation × total)"
                      if not any(x.memory_rule == "vllm" for x in replicas[:i]) else None)
        text = f"{m['max_sequences']}\nconversations" if m["fits"] else "does not fit"
        high = max(bottom, m["hbm_bytes"] / 1e9)
        ax.text(i, high * 1.02, text, ha="center", va="bottom", fontsize=8)
        top = max(top, high)
    ax.set_xticks(range(len(replicas)), labels, fontsize=8)
    ax.set_xlim(-0.6, len(replicas) - 0.4)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("GB per GPU (1 GB = 10⁹ bytes)")
    ax.set_title(f"One GPU's memory as the device reports it, and the {ctx:,}-token "
                 "conversations its replica holds", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    return fig


def cycle_figure(r: sizing.Replica, isl: int, osl: int, batch: int,
                 fig: Figure | None = None) -> Figure:
    """The steady cycle of a replica holding ``batch`` conversations of isl-token prompts and
    osl-token answers (:func:`vidya_lab.sizing.cycle`).

    Left: the tokens of one decode-only iteration and of one mixed iteration (the decodes plus a
    chunk of waiting prompts) against the engine's token budget. Right: the osl iterations of one
    cycle as time, the mixed ones and the decode-only ones, and the mean iteration, which is the
    mean TPOT.
    """
    b = check_int("batch", batch, minimum=1, maximum=r.max_num_seqs)
    c = sizing.cycle(r, b, isl, osl)
    budget = r.max_batched_tokens
    fig = fig or Figure(figsize=(9.0, 3.0))
    fig.clear()
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.6])
    kinds = ("decode-only", "mixed")
    decode = (c["batch"], c["batch"])
    chunk = (0.0, c["chunk_tokens"])
    left.barh(kinds, decode, color="#4c72b0", label="one token per conversation")
    left.barh(kinds, chunk, left=decode, color="#dd8452", label="prompt chunk")
    left.axvline(budget, color="black", ls="--", lw=1, label=f"token budget ({budget:,})")
    left.set_xlabel("tokens in one iteration")
    left.set_xlim(0, budget * 1.15)
    left.legend(fontsize=7, loc="lower right", frameon=False)
    left.set_title(f"{c['batch']:.0f} conversations decoding", fontsize=9)
    n_mix = c["mixed_iterations"]
    parts = ((n_mix * c["step_mixed_s"], "#dd8452",
              f"{n_mix:.0f} mixed × {c['step_mixed_s'] * 1e3:.0f} ms"),
             ((osl - n_mix) * c["step_decode_s"], "#4c72b0",
              f"{osl - n_mix:.0f} decode-only × {c['step_decode_s'] * 1e3:.0f} ms"))
    start = 0.0
    for width, colour, text in parts:
        right.barh(0, width, left=start, color=colour, height=0.5)
        right.text(start + width / 2, 0.36, text, ha="center", va="bottom", fontsize=8)
        start += width
    right.set_ylim(-0.5, 0.9)
    right.set_yticks([])
    right.set_xlim(0, start * 1.02)
    right.set_xlabel(f"seconds: one cycle of {osl} iterations (each conversation gains {osl} tokens)",
                     fontsize=9)
    right.set_title(f"mean iteration = mean TPOT = {c['step_s'] * 1e3:.0f} ms; "
                    f"{c['output_tokens_per_s']:,.0f} output tokens/s", fontsize=9)
    fig.tight_layout()
    return fig
