"""Chapter 1's figures: each drawn from simulated timelines or from results the package computed.

No math here beyond choosing what to show: the timelines come from :mod:`vidya_lab.toyserver`
(and :mod:`vidya_lab.bench`), the metrics from :mod:`vidya_lab.slo`. Every function returns a new
matplotlib :class:`~matplotlib.figure.Figure`.

* :func:`request_anatomy` — one request's timeline with every metric of the chapter marked;
* :func:`timelines` — a few requests on a small replica, every token a tick;
* :func:`run_intervals` — independent runs' p99s and what each run's intervals claim;
* :func:`attainment_curve` — attainment against offered load, with the goodput;
* :func:`open_vs_closed` — p99 TTFT of closed- and open-loop load at the same mean rate;
* :func:`table` — rows of numbers as a small HTML table (no index column; formats per column).
"""

from __future__ import annotations

from html import escape

import numpy as np
from matplotlib.figure import Figure

from vidya_lab import slo

__all__ = ["anatomy_row", "attainment_curve", "open_vs_closed", "request_anatomy",
           "run_intervals", "table", "timelines"]

COLOURS = {"queue": "#f2c57c", "prefill": "#d9534f", "decode": "#9ab7d3", "token": "#1f3b57",
           "boot": "#c77", "bm": "#246", "truth": "#2a2", "target": "black"}


def anatomy_row(trace: slo.Timelines, *, exclude: tuple[int, ...] = (),
                tokens: tuple[int, int] = (12, 40)) -> int:
    """The request to draw in :func:`request_anatomy`: among finished requests that waited in the
    queue and have ``tokens[0]`` to ``tokens[1]`` output tokens, the one whose longest gap between
    tokens is the largest multiple of its TPOT (a visible stall). Needs per-token times."""
    if trace.token_times_s is None:
        raise ValueError("request_anatomy needs per-token emit times (record_token_times=True)")
    best, score = -1, -np.inf
    for i in np.flatnonzero(trace.finished & (trace.output_tokens >= tokens[0])
                            & (trace.output_tokens <= tokens[1])
                            & (trace.admitted_s - trace.arrival_s > 0)):
        if int(i) in exclude:
            continue
        r = trace.record(int(i))
        gaps = np.diff(r.token_times_s)
        ratio = gaps.max() / ((r.finish_s - r.first_token_s) / (r.output_tokens - 1))
        if ratio > score:
            best, score = int(i), ratio
    if best < 0:
        raise ValueError("no finished request of that length waited in the queue")
    return best


def request_anatomy(trace: slo.Timelines, row: int) -> Figure:
    """One request's timeline: arrival, queue, prefill, first token, each token, finish, with
    queue wait, TTFT, end-to-end latency, TPOT and the longest ITL gap marked (seconds since its
    arrival)."""
    r = trace.record(row)
    a = r.arrival_s
    s, f, c = r.admitted_s - a, r.first_token_s - a, r.finish_s - a
    ticks = np.asarray(r.token_times_s) - a
    gaps = np.diff(ticks)
    k = int(np.argmax(gaps))
    tpot = (c - f) / (r.output_tokens - 1)
    fig = Figure(figsize=(9, 3.3))
    ax = fig.subplots()
    for left, width, key, label in ((0, s, "queue", "waiting in the queue"),
                                    (s, f - s, "prefill", "prefill (one step)"),
                                    (f, c - f, "decode", "decode")):
        ax.barh(0, width, left=left, height=0.36, color=COLOURS[key], label=label)
    ax.vlines(ticks, -0.18, 0.18, color=COLOURS["token"], lw=0.8, label="a token is emitted")
    for x, name in ((0, "arrival $a$"), (s, "admitted $s$"), (f, "first token $f$"),
                    (c, "finish $c$")):
        ax.plot([x, x], [-0.3, 0.3], color="black", lw=0.8, ls=":")
        ax.text(x, -0.36, name, ha="center", va="top", fontsize=8)
    _span(ax, 0, s, 0.34, f"queue wait {s:.2f} s")
    _span(ax, 0, f, 0.58, f"TTFT = $f - a$ = {f:.2f} s")
    _span(ax, 0, c, 0.82, f"end-to-end = $c - a$ = {c:.2f} s")
    _span(ax, f, c, -0.72, f"TPOT = $(c - f)/(n - 1)$ = {tpot * 1e3:.0f} ms  ({r.output_tokens} "
          "tokens)")
    _span(ax, ticks[k], ticks[k + 1], -0.5, f"longest ITL {gaps[k] * 1e3:.0f} ms", small=True)
    ax.set_ylim(-0.95, 1.0)
    ax.set_xlim(-0.03 * c, c * 1.04)
    ax.set_yticks([])
    ax.set_xlabel("seconds since the request arrived")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def _span(ax, x0: float, x1: float, y: float, text: str, small: bool = False) -> None:
    ax.annotate("", xy=(x1, y), xytext=(x0, y), arrowprops={"arrowstyle": "<->", "lw": 0.9})
    ax.text((x0 + x1) / 2 if not small else x1, y + 0.04, text, ha="center" if not small
            else "left", va="bottom", fontsize=8)


def timelines(trace: slo.Timelines) -> Figure:
    """Each request's timeline (waiting, prefill, every token as a tick) with its TTFT, TPOT and
    end-to-end latency written beside it; the trace's own timestamps."""
    fig = Figure(figsize=(9, 1.2 + 0.75 * len(trace)))
    ax = fig.subplots()
    t0 = float(np.min(trace.arrival_s))
    for row in range(len(trace)):
        r = trace.record(row)
        y = len(trace) - 1 - row
        a, s, f, c = (x - t0 for x in (r.arrival_s, r.admitted_s, r.first_token_s, r.finish_s))
        first = row == 0
        for left, width, key, label in ((a, s - a, "queue", "waiting in the queue"),
                                        (s, f - s, "prefill", "prefill (one step)"),
                                        (f, c - f, "decode", "decode")):
            ax.barh(y, width, left=left, height=0.5, color=COLOURS[key],
                    label=label if first else None)
        ax.vlines(np.asarray(r.token_times_s) - t0, y - 0.25, y + 0.25, color=COLOURS["token"],
                  lw=0.6, label="a token is emitted" if first else None)
        ax.plot([a], [y], marker="v", color="black", ms=7, label="arrival" if first else None)
        ax.annotate("", xy=(f, y + 0.42), xytext=(a, y + 0.42),
                    arrowprops={"arrowstyle": "<->", "lw": 0.9})
        ax.text((a + f) / 2, y + 0.47, f"TTFT {f - a:.2f} s", ha="center", va="bottom", fontsize=8)
        tpot = (c - f) / (r.output_tokens - 1) if r.output_tokens > 1 else float("nan")
        ax.text(c + 0.01, y, f"{r.output_tokens} tokens, TPOT {tpot * 1000:.0f} ms, "
                f"e2e {c - a:.2f} s", va="center", fontsize=8)
    ax.set_yticks(range(len(trace)), [f"request {i}" for i in reversed(range(len(trace)))])
    ax.set_ylim(-0.6, len(trace) - 0.1 + 0.3)
    ax.set_xlim(-0.02, (float(np.nanmax(trace.finish_s)) - t0) * 1.45)
    ax.set_xlabel("time since the first arrival (s)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=7, ncol=5, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def run_intervals(intervals, long_run: float, spread: tuple[float, float]) -> Figure:
    """One row per independent run: its p99 (a dot), its bootstrap and batch-means 95 % intervals,
    with the long-run p99 (a vertical line) and the middle 95 % of the runs' p99s (a band).

    ``intervals``: :class:`vidya_lab.bench.RunIntervals`, one per run (seconds).
    """
    runs = list(intervals)
    fig = Figure(figsize=(8, max(1.5, 0.6 + 0.16 * len(runs))))  # room for legend and label
    ax = fig.subplots()
    ax.axvspan(*spread, color="#ddd", label="middle 95 % of the runs' p99s")
    for y, iv in enumerate(runs):
        bm = iv.batch_means
        ax.plot([bm.low, bm.high], [y + 0.15] * 2, color=COLOURS["bm"], lw=2,
                label="batch-means interval" if y == 0 else None)
        ax.plot(list(iv.bootstrap), [y - 0.15] * 2, color=COLOURS["boot"], lw=2,
                label="bootstrap interval" if y == 0 else None)
        ax.plot([iv.estimate], [y], "o", color="black", ms=3, label="the run's p99" if y == 0
                else None)
    ax.axvline(long_run, color=COLOURS["truth"], lw=1.5, label="long-run p99")
    ax.set_xlim(left=0.0)
    ax.set_yticks([])
    ax.set_ylabel(f"{len(runs)} independent runs")
    ax.set_xlabel("p99 TTFT (s)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def attainment_curve(rates, attainments, goodput_per_s: float, target: float) -> Figure:
    """SLO attainment against offered load (requests/s), the attainment target and the goodput."""
    fig = Figure(figsize=(6.5, 3.2))
    ax = fig.subplots()
    ax.plot(rates, attainments, marker="o", ms=3, label="attainment")
    ax.axhline(target, color="gray", ls="--", lw=1, label="attainment target")
    ax.axvline(goodput_per_s, color="#c33", lw=1.5, label="goodput (DistServe's sense)")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("offered load (requests/s)")
    ax.set_ylabel("SLO attainment (from 0)")
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    return fig


def open_vs_closed(rows: list[dict], ttft_target_s: float) -> Figure:
    """p99 TTFT against the mean offered rate: each closed loop (labelled with its users) and an
    open (Poisson) loop at the same rate; rows from :func:`vidya_lab.bench.compare_open_closed`."""
    rate = [r["rate_per_s"] for r in rows]
    fig = Figure(figsize=(7, 3.4))
    ax = fig.subplots()
    ax.plot(rate, [r["open_p99_ttft_s"] for r in rows], "o-", color="#c33",
            label="open loop (Poisson arrivals)")
    ax.plot(rate, [r["closed_p99_ttft_s"] for r in rows], "s-", color="#246",
            label="closed loop (users wait for their answer)")
    for r in rows:
        ax.annotate(f"{r['users']}", (r["rate_per_s"], r["closed_p99_ttft_s"]),
                    textcoords="offset points", xytext=(0, -12), ha="center", fontsize=7)
    ax.axhline(ttft_target_s, color="black", ls="--", lw=1, label="TTFT target")
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("mean offered load (requests/s); numbers: closed-loop users")
    ax.set_ylabel("p99 TTFT (s)")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    return fig


def table(rows: list[dict], columns: dict[str, tuple[str, str]]) -> str:
    """An HTML table of ``rows``: ``columns`` maps a row key to (header, format spec); a value that
    is a string or ``None`` is shown as is (``None`` as a dash)."""
    head = "".join(f"<th>{escape(h)}</th>" for h, _ in columns.values())
    body = []
    for row in rows:
        cells = []
        for key, (_, spec) in columns.items():
            x = row[key]
            text = "–" if x is None else x if isinstance(x, str) else format(x, spec)
            cells.append(f"<td>{escape(str(text))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<table class='table'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}"
            "</tbody></table>")
