"""Chapter 4's figures: each function takes what the package computed and returns a Figure.

Drawing only (no model here): the schematic hashes its blocks with
:func:`vidya_lab.caching.block_hashes`, and every curve is an array a caching function returned.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from vidya_lab import caching

SHARED, OWN_A, OWN_B, CHANGED = "#7ab37a", "#9db4d3", "#e8b27a", "#c33"


def _blocks_row(ax, y: float, tokens, keys, shared: set, own: str, block: int, changed=()) -> None:
    """One request: its full blocks (hash below, arrows along the chain) and its partial tail."""
    full = len(keys)
    for i in range(full):
        x = i * (block + 1)
        colour = SHARED if keys[i] in shared else own
        ax.add_patch(Rectangle((x, y), block, 1, facecolor=colour, edgecolor="black", lw=0.8))
        for j in range(block):
            t = i * block + j
            ax.text(x + j + 0.5, y + 0.5, str(tokens[t]), ha="center", va="center", fontsize=7,
                    color=CHANGED if t in changed else "black",
                    fontweight="bold" if t in changed else "normal")
        ax.text(x + block / 2, y - 0.35, f"key {keys[i] & 0xFFFF:04x}", ha="center", va="center",
                fontsize=7, family="monospace")
        if i:
            ax.add_patch(FancyArrowPatch((x - 1, y + 0.5), (x, y + 0.5), arrowstyle="-|>",
                                         mutation_scale=8, lw=0.8))
    rest = tokens[full * block:]
    if len(rest):
        x = full * (block + 1)
        ax.add_patch(Rectangle((x, y), block, 1, facecolor="white", edgecolor="gray", ls="--"))
        for j, t in enumerate(rest):
            ax.text(x + j + 0.5, y + 0.5, str(t), ha="center", va="center", fontsize=7, color="gray")
        ax.text(x + block / 2, y - 0.35, "partial: not cached", ha="center", fontsize=7, color="gray")


def block_hashing(a_tokens, b_tokens, block_tokens: int = 4) -> Figure:
    """Two prompts cut into blocks; each block's key chains its parent's; shared keys in green.

    The keys are :func:`vidya_lab.caching.block_hashes` of each prompt (last four hex digits shown);
    a token of ``b_tokens`` that differs from ``a_tokens`` is printed in red.
    """
    ka = caching.block_hashes(list(a_tokens), block_tokens)
    kb = caching.block_hashes(list(b_tokens), block_tokens)
    shared = set(ka) & set(kb)
    changed = {i for i, (x, y) in enumerate(zip(a_tokens, b_tokens, strict=False)) if x != y}
    width = (max(len(a_tokens), len(b_tokens)) // block_tokens + 1) * (block_tokens + 1)
    fig = Figure(figsize=(7.5, 2.6))
    ax = fig.subplots()
    _blocks_row(ax, 2.2, list(a_tokens), ka, shared, OWN_A, block_tokens)
    _blocks_row(ax, 0.2, list(b_tokens), kb, shared, OWN_B, block_tokens, changed)
    ax.text(-0.5, 2.7, "A", ha="right", va="center", fontweight="bold")
    ax.text(-0.5, 0.7, "B", ha="right", va="center", fontweight="bold")
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black") for c in (SHARED, OWN_A, OWN_B)]
    ax.legend(handles, ["same key in A and B (shared)", "A only", "B only (after the change)"],
              fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=3, frameon=False)
    ax.set_title("key of a block = hash(key of the block before it, the block's tokens)", fontsize=8)
    ax.set_xlim(-1.5, width)
    ax.set_ylim(-0.3, 3.4)
    ax.axis("off")
    fig.tight_layout()
    return fig


def cache_memory(sizes_gb, tokens_per_s, no_cache_tokens_per_s: float, break_even_gb: float) -> Figure:
    """Saturated output tokens/s against the memory set aside for the cache (GB per GPU)."""
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    ax.plot(sizes_gb, tokens_per_s, color="#246", label="syllabus cached and shared")
    ax.axhline(no_cache_tokens_per_s, color="#c33", ls="--", label="no prefix cache")
    ax.axvline(break_even_gb, color="gray", lw=0.8)
    ax.set_xlabel("memory set aside for the prefix cache (GB per GPU)")
    ax.set_ylabel("saturated output tokens/s")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def cliff(sizes_gb, regular: dict, memoryless: dict, kv_budget_gb: float) -> Figure:
    """Share of possible history hits kept against the cache size, two think-time spreads
    (:func:`vidya_lab.caching.cliff_sweep` results)."""
    fig = Figure(figsize=(7, 3.4))
    ax = fig.subplots()
    ax.plot(sizes_gb, regular["gain_share"] * 100, "o-", color="#246", label="LRU, think time ±30%")
    ax.plot(sizes_gb, memoryless["gain_share"] * 100, "s:", ms=4, color="#7a5",
            label="LRU, think time ±100% (memoryless)")
    ax.plot(sizes_gb, regular["proportional"] * 100, ls="--", color="#999",
            label="in proportion to the room (±30%)")
    ax.axvline(kv_budget_gb, color="#c33", lw=0.8, label="replica's whole KV budget")
    ax.set_xlabel("cache (GB per GPU)")
    ax.set_ylabel("history hits kept (% of possible)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def offload(sizes_gb, rows: list[dict], cpu_gb: float) -> Figure:
    """Follow-ups' hit rate and mean TTFT against the GPU cache, without and with a CPU tier
    (:func:`vidya_lab.caching.offload_sweep` rows)."""
    fig = Figure(figsize=(7.5, 3.2))
    left, right = fig.subplots(1, 2)
    gpu = np.array([x["hit_rate_gpu"] for x in rows]) * 100
    tier = np.array([x["hit_rate_tiered"] for x in rows]) * 100
    left.plot(sizes_gb, gpu, "o-", color="#246", label="GPU cache only")
    left.plot(sizes_gb, tier, "s-", color="#c70", label=f"+ {cpu_gb:.0f} GB/GPU CPU tier")
    left.set_xlabel("GPU cache (GB per GPU)")
    left.set_ylabel("follow-ups' token hit rate (%)")
    left.set_ylim(0, 100)
    left.legend(fontsize=8, loc="lower right")
    right.plot(sizes_gb, [x["ttft_s_mean_gpu_only"] * 1e3 for x in rows], "o-", color="#246",
               label="recomputed")
    right.plot(sizes_gb, [x["ttft_s_mean_tiered"] * 1e3 for x in rows], "s-", color="#c70",
               label="restored over PCIe")
    right.set_xlabel("GPU cache (GB per GPU)")
    right.set_ylabel("follow-ups' mean TTFT, idle (ms)")
    right.set_ylim(bottom=0)
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig


def speculation(batches, curves: dict, marks: dict) -> Figure:
    """Speed-up over plain decoding against the decode batch (log scale), one curve per drafter
    (label → speed-ups from :func:`vidya_lab.caching.speculative_at_batch`); ``marks``: label →
    batch drawn as a vertical line."""
    fig = Figure(figsize=(7, 3.3))
    ax = fig.subplots()
    top = 0.0
    for label, speedups in curves.items():
        ax.plot(batches, speedups, "o-", ms=3, label=label)
        top = max(top, float(np.max(speedups)))
    ax.set_ylim(0, 1.15 * top)
    for label, b in marks.items():
        ax.axvline(b, color="gray", lw=0.8, ls=":")
        ax.text(b, ax.get_ylim()[1], f" {label}", rotation=90, va="top", fontsize=7, color="gray")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("decode batch (sequences)")
    ax.set_ylabel("speed-up over plain decoding")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def side_channel(guessed_tokens, signal_s, step_s: float, step_label: str) -> Figure:
    """TTFT difference between a probe that hits and one that misses, against the guessed tokens
    (:func:`vidya_lab.caching.probe_signal`), beside one decode step (the jitter of one probe)."""
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    ax.loglog(guessed_tokens, np.asarray(signal_s) * 1e3, "o-", color="#246",
              label="signal: TTFT(miss) − TTFT(hit)")
    ax.axhline(step_s * 1e3, color="#c33", ls="--", label=step_label)
    ax.set_xlabel("guessed tokens in the probe")
    ax.set_ylabel("milliseconds")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
