"""Chapter 5's figures and tables, drawn from what the simulator and the cost model computed.

No number here is typed by hand: every bar, dot and line comes from a
:class:`vidya_lab.admission.SimResult` (its iteration log and timelines) or from the rows of
:mod:`vidya_lab.admission.disaggregation`. The chapter's cells call one function per figure or table.

* :func:`iteration_log` — a minute of one replica: decoding sequences and step times.
* :func:`scheduler_iterations` — the schematic: what the scheduler put in each iteration around a
  teacher's upload (decodes first, then prompt chunks, within the token budget), and how long each
  iteration took.
* :func:`chunk_dial` — the token budget as a dial: the students' longest gap against the cost of
  chunking the upload.
* :func:`when_it_pays` — GPUs for the exam peak against the TPOT target: colocated replicas and
  disaggregated pools, without and with the prefix cache.
* :func:`phase_table`, :func:`styled` — tables (at most six columns, units in the headers, no index).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from vidya_lab import _validate as v
from vidya_lab.admission import UPLOAD, SimResult

_BLUE, _RED, _GREY, _GREEN, _GOLD = "#1f3b57", "#c44e52", "#9aa5b1", "#55a868", "#dd8452"


def iteration_log(result: SimResult) -> Figure:
    """Two panels over time: decoding sequences per iteration, and each iteration's duration (ms)."""
    v.check_instance("result", result, SimResult, "vidya_lab.admission.SimResult")
    log = result.iterations
    fig = Figure(figsize=(9, 3.2))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.step(log.start_s, log.decode_count, where="post", lw=0.8, color=_BLUE)
    ax1.set_ylabel("decoding\nsequences")
    ax1.set_ylim(bottom=0)
    carries = log.prefill_tokens > 0
    ax2.plot(log.start_s[~carries], log.duration_s[~carries] * 1000, ".", ms=2, color=_GREY,
             label="decodes only")
    ax2.plot(log.start_s[carries], log.duration_s[carries] * 1000, ".", ms=3, color=_RED,
             label="carries prompt tokens")
    ax2.set_ylabel("iteration (ms)")
    ax2.set_ylim(bottom=0)
    ax2.set_xlabel("time (s)")
    ax2.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def _klass_of_rows(result: SimResult) -> dict[int, str]:
    t = result.timelines
    return dict(zip(t.request_id.tolist(), t.klass.tolist(), strict=True))


def _window(result: SimResult, klass: str, before: int, after: int) -> tuple[range, int]:
    """The iterations from ``before`` ahead of the first chunk of class ``klass`` to ``after``
    past its last, and that request's workload row."""
    log = result.iterations
    rows = [r for r, k in _klass_of_rows(result).items() if k == klass]
    if not rows:
        raise ValueError(f"the run has no finished request of class {klass!r}")
    row = rows[0]
    chunk_step = np.repeat(np.arange(len(log)), np.diff(log.chunk_offsets))
    steps = np.unique(chunk_step[log.chunk_request == row])
    first, last = int(steps[0]), int(steps[-1])
    return range(max(0, first - before), min(len(log), last + after + 1)), row


def scheduler_iterations(result: SimResult, budget_tokens: int, tpot_target_s: float, *,
                         klass: str = UPLOAD, before: int = 2, after: int = 2) -> Figure:
    """The schematic of chunked prefill, from a real run: for each iteration around the long
    prompt of class ``klass``, the token budget filled by the decodes first (one token each,
    their count written on the bar), then the prompt chunks in the order the scheduler picked them
    (the long prompt's numbered); below, each iteration's duration against the TPOT target."""
    v.check_instance("result", result, SimResult, "vidya_lab.admission.SimResult")
    budget = v.check_int("budget_tokens", budget_tokens, minimum=1)
    target = v.check_real("tpot_target_s", tpot_target_s, minimum=0.0, min_inclusive=False)
    steps, row = _window(result, klass, v.check_int("before", before, minimum=0),
                         v.check_int("after", after, minimum=0))
    log = result.iterations
    n_chunks = sum(1 for j in range(len(log)) for i, _ in log.step_chunks(j) if i == row)
    fig = Figure(figsize=(9, 4.4))
    ax1, ax2 = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    k, colours = 0, []
    for x, j in enumerate(steps):
        base = int(log.decode_count[j])
        ax1.bar(x, base, color=_BLUE)
        ax1.text(x, budget * 0.01, f"{base} decodes", rotation=90, ha="center", va="bottom",
                 fontsize=6, color="white" if log.prefill_tokens[j] else _BLUE)
        mine = False
        for i, c in log.step_chunks(j):
            ax1.bar(x, c, bottom=base, color=_RED if i == row else _GOLD, edgecolor="white", lw=0.5)
            if i == row:
                mine, k = True, k + 1
                ax1.text(x, base + c / 2, f"{k}/{n_chunks}", ha="center", va="center",
                         color="white", fontsize=7)
            base += c
        colours.append(_RED if mine else _GOLD if log.prefill_tokens[j] else _BLUE)
    ax1.axhline(budget, color="black", ls="--", lw=1)
    handles = [Patch(color=_BLUE, label="decodes (one token per student)"),
               Patch(color=_GOLD, label="students' prompt chunks"),
               Patch(color=_RED, label=f"the {klass}'s chunks (k of n)"),
               Line2D([], [], color="black", ls="--", lw=1, label=f"token budget ({budget:,})")]
    ax1.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax1.set_ylabel("tokens in the iteration")
    x = np.arange(len(steps))
    ax2.bar(x, log.duration_s[list(steps)] * 1000, color=colours)
    ax2.axhline(target * 1000, color="black", ls=":", lw=1, label="TPOT target")
    ax2.set_ylabel("iteration (ms)")
    ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax2.set_xticks(x, [f"{log.start_s[j]:.2f}" for j in steps], rotation=90, fontsize=6)
    ax2.set_xlabel("iteration, by its start time (s)")
    fig.tight_layout()
    return fig


def chunk_dial(chunks, worst_gap_s, alone_s, whole_s: float, tpot_target_s: float) -> Figure:
    """Against the token budget (log axis): the students' longest gap during the upload, and the
    upload's prefill alone in chunks of that budget beside one whole step."""
    c = v.check_reals("chunks", chunks, minimum=1.0, max_length=64)
    gap = v.check_reals("worst_gap_s", worst_gap_s, minimum=0.0, max_length=64)
    alone = v.check_reals("alone_s", alone_s, minimum=0.0, max_length=64)
    if not (c.size == gap.size == alone.size):
        raise ValueError("chunks, worst_gap_s and alone_s must have one value per budget")
    fig = Figure(figsize=(9, 3.0))
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(c, gap * 1000, "o-", color=_BLUE)
    ax1.axhline(tpot_target_s * 1000, color="black", ls="--", lw=1, label="TPOT target")
    ax1.set_xscale("log", base=2)
    ax1.set_ylim(bottom=0)
    ax1.set_xlabel("token budget (tokens)")
    ax1.set_ylabel("students' longest gap (ms)")
    ax1.legend(fontsize=8)
    ax2.plot(c, alone, "o-", color=_RED, label="upload prefilled in chunks")
    ax2.axhline(whole_s, color=_RED, ls=":", label="in one whole step")
    ax2.set_xscale("log", base=2)
    ax2.set_ylim(bottom=0)
    ax2.set_xlabel("token budget (tokens)")
    ax2.set_ylabel("upload's prefill, alone (s)")
    ax2.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def _series(rows, key):
    return np.array([np.nan if r[key] is None else r[key] for r in rows], dtype=float)


def when_it_pays(cold_rows, warm_rows, tpot_target_s: float) -> Figure:
    """GPUs for the peak against the TPOT target (rows of
    :func:`vidya_lab.admission.tpot_sweep`), without (left) and with (right) the prefix cache:
    colocated at the engine's budget, colocated at the stall-free budget, and disaggregated (its
    prefill pool shaded). The book's target is marked."""
    fig = Figure(figsize=(9, 3.3))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, rows, title in ((axes[0], cold_rows, "nothing cached"),
                            (axes[1], warm_rows, "syllabus and subject prompt cached")):
        t = _series(rows, "tpot_target_s") * 1000
        ax.fill_between(t, 0, _series(rows, "prefill_gpus"), color=_GREEN, alpha=0.15,
                        label="of which the prefill pool")
        ax.plot(t, _series(rows, "colocated_gpus"), "s--", ms=3, color=_GREY,
                label="colocated, engine's budget")
        ax.plot(t, _series(rows, "stall_free_gpus"), "o-", ms=3, color=_BLUE,
                label="colocated, stall-free budget")
        ax.plot(t, _series(rows, "disaggregated_gpus"), "^-", ms=3, color=_GREEN,
                label="disaggregated")
        ax.axvline(tpot_target_s * 1000, color="black", ls=":", lw=1)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("TPOT target (ms)")
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("GPUs for the exam peak")
    axes[1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


def styled(rows, formats: dict[str, str] | None = None):
    """A list of row dicts as a table: no index, the given column formats."""
    df = pd.DataFrame(list(rows))
    return df.style.format(formats or {}, na_rep="–").hide(axis="index")


PHASES = ("before", "during", "after")


def phase_table(report: dict):
    """Before / during / after a teacher's upload (:func:`vidya_lab.admission.upload_report`):
    students, TTFT p99, TPOT p99, ITL p99 and the longest gap between two tokens."""
    def p99(s, key, scale=1.0):
        x = None if s is None or s.get(key) is None else s[key].get("p99")
        return None if x is None else x * scale

    rows = []
    for phase in PHASES:
        s = report[phase]
        rows.append({"phase": phase, "students": 0 if s is None else s["requests"],
                     "TTFT p99 (s)": p99(s, "ttft_s"), "TPOT p99 (ms)": p99(s, "tpot_s", 1000),
                     "ITL p99 (ms)": p99(s, "itl_s", 1000),
                     "longest gap (s)": None if s is None else s["itl_max_s"]})
    return styled(rows, {"TTFT p99 (s)": "{:.2f}", "TPOT p99 (ms)": "{:.0f}",
                         "ITL p99 (ms)": "{:.0f}", "longest gap (s)": "{:.2f}"})
