"""Presenting a plan to people: a readable table and the one-page figure for finance.

No numbers are computed here: everything shown comes from :func:`vidya_lab.plan.plan`'s result.
"""

from __future__ import annotations

from pathlib import Path


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.2%}"


def _money(x: float) -> str:
    return f"${x:,.0f}"


def _fig_money(x: float) -> str:
    return f"USD {x:,.0f}"  # matplotlib would read "$…$" as mathematics


def plan_table(result: dict) -> str:
    """The plan as plain text: the answer first, then latencies, money, candidates and risks."""
    s = result["scenario"]
    lines = [
        f"Plan for {s['model_id']} on {'an exam' if result['day'] == 'exam' else 'a normal'} day "
        f"(peak {s['normal_peak_rps'] * (s['exam_multiplier'] if result['day'] == 'exam' else 1):g} "
        f"requests/s, {result['policy']} autoscaling)",
        "",
        f"  rent           {result['gpus']} x {result['gpu']} at the peak "
        f"({result['replicas_peak']} replicas of TP{result['tp']} x PP{result['pp']}, "
        f"{result['precision']}, {result['headroom']} spare)",
        f"  monthly cost   {_money(result['monthly_cost'])} "
        f"({result['days_per_month']} days x {_money(result['daily_cost'])}/day, "
        f"{result['gpu_hours_per_day']:,.0f} GPU-hours/day)",
        f"  TTFT           p50 {result['ttft_s']['p50']:.3f} s   p99 {result['ttft_s']['p99']:.3f} s"
        f"   (target {s['ttft_target_s']:g} s)",
        f"  TPOT           p50 {result['tpot_s']['p50'] * 1e3:.1f} ms  "
        f"p99 {result['tpot_s']['p99'] * 1e3:.1f} ms  (target {s['tpot_target_s'] * 1e3:g} ms)",
        f"  attainment     {_pct(result['attainment'])} of {result['arrived']:,} requests "
        f"(target {_pct(s['attainment_target'])}); 7 am rush {_pct(result['rush_attainment'])}",
        f"  cold start     {result['cold_start_s'] / 60:.1f} min from 'scale up' to serving",
        "",
        "  Cheapest layout per GPU type and precision at the peak (chapter 3):",
    ]
    for c in result["candidates"]:
        lines.append(f"    {c['gpu']:<10} {c['precision']:<5} TP{c['tp']} x PP{c['pp']} "
                     f"x {c['replicas']:<3} = {c['gpus']:>4} GPUs  {_money(c['cost_per_hour'])}/h")
    risks = result.get("risks")
    if risks:
        lines += [
            "",
            "  Risks:",
            f"    traffic {risks['traffic_factor'] - 1:.0%} above forecast: attainment "
            f"{_pct(risks['attainment_above_forecast'])}; first to slip: {risks['breaks_first']}",
            f"    reactive scaling only: 7 am rush attainment "
            f"{_pct(risks['reactive_rush_attainment'])}",
        ]
    pc = result["prefix_cache"]
    lines += ["", f"  Prefix cache (not counted on): TTFT {pc['ttft_s_cold_cache']:.3f} s cold, "
                  f"{pc['ttft_s_warm_cache']:.3f} s warm"]
    return "\n".join(lines)


def plan_figure(result: dict, path=None):
    """The one-page figure (a matplotlib Figure); written to ``path`` (.png or .svg) if given."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    s = result["scenario"]
    hours = list(range(len(result["replicas_by_hour"])))
    fig = plt.figure(figsize=(8.27, 11.0))  # A4 portrait
    grid = fig.add_gridspec(4, 1, height_ratios=[0.55, 1.3, 1.0, 1.4], hspace=0.5)

    ax0 = fig.add_subplot(grid[0])
    ax0.axis("off")
    ax0.set_title("Exam-season capacity plan", loc="left", fontsize=16, fontweight="bold")
    headline = (
        f"Rent up to {result['gpus']} x {result['gpu']} ({result['replicas_peak']} replicas, "
        f"TP{result['tp']} x PP{result['pp']}, {result['precision']}).\n"
        f"Monthly cost: {_fig_money(result['monthly_cost'])}  "
        f"({_fig_money(result['daily_cost'])} a day, {result['policy']} scaling).\n"
        f"p99 time to first token {result['ttft_s']['p99']:.2f} s (target {s['ttft_target_s']:g} s); "
        f"p99 time per token {result['tpot_s']['p99'] * 1e3:.0f} ms "
        f"(target {s['tpot_target_s'] * 1e3:g} ms).\n"
        f"{_pct(result['attainment'])} of requests meet both targets "
        f"(target {_pct(s['attainment_target'])})."
    )
    ax0.text(0.0, 0.9, headline, va="top", fontsize=10.5, linespacing=1.6)

    ax1 = fig.add_subplot(grid[1])
    ax1.bar(hours, result["arrivals_by_hour"], color="#c6dbef", label="requests per hour")
    ax1.set_ylabel("requests per hour")
    ax1.set_xlabel("hour of the day")
    ax1b = ax1.twinx()
    ax1b.step(hours, result["replicas_by_hour"], where="mid", color="#08519c", lw=2,
              label="serving replicas (hourly mean)")
    ax1b.set_ylabel("replicas")
    ax1.set_title("Traffic and the fleet over the day", loc="left")
    handles = ax1.get_legend_handles_labels()[0] + ax1b.get_legend_handles_labels()[0]
    labels = ax1.get_legend_handles_labels()[1] + ax1b.get_legend_handles_labels()[1]
    ax1.legend(handles, labels, loc="upper left", fontsize=8)
    ax1.set_xticks(range(0, len(hours), 2))

    ax2 = fig.add_subplot(grid[2])
    att = [a if a is not None else float("nan") for a in result["per_hour_attainment"]]
    ax2.plot(hours, att, marker="o", ms=3, color="#238b45", label="attainment")
    ax2.axhline(s["attainment_target"], color="black", ls="--", lw=1, label="target")
    ax2.set_ylim(min(0.9, min(a for a in att if a == a) - 0.01) if any(a == a for a in att) else 0.9,
                 1.002)
    ax2.set_ylabel("fraction meeting the SLO")
    ax2.set_xlabel("hour of the day")
    ax2.set_title("SLO attainment by hour", loc="left")
    ax2.legend(loc="lower right", fontsize=8)
    ax2.set_xticks(range(0, len(hours), 2))

    ax3 = fig.add_subplot(grid[3])
    cands = result["candidates"]
    names = [f"{c['gpu']} {c['precision']}  TP{c['tp']}xPP{c['pp']} x{c['replicas']}" for c in cands]
    costs = [c["cost_per_hour"] for c in cands]
    colors = ["#08519c" if (c["gpu"], c["precision"], c["tp"], c["pp"]) ==
              (result["gpu"], result["precision"], result["tp"], result["pp"]) else "#9ecae1"
              for c in cands]
    ax3.barh(range(len(cands)), costs, color=colors)
    ax3.set_yticks(range(len(cands)), names, fontsize=7)
    ax3.invert_yaxis()
    ax3.set_xlabel("USD per hour at the peak")
    ax3.set_title("The cheapest layout of each GPU type that meets the targets", loc="left")

    risks = result.get("risks")
    if risks:
        fig.text(0.08, 0.015,
                 f"Risks: with traffic {risks['traffic_factor'] - 1:.0%} above forecast, attainment "
                 f"{_pct(risks['attainment_above_forecast'])} (first to slip: {risks['breaks_first']}). "
                 f"Reactive scaling alone: 7 am rush attainment "
                 f"{_pct(risks['reactive_rush_attainment'])}.",
                 fontsize=8, wrap=True)
    if path is not None:
        path = Path(path)
        if path.suffix.lower() not in (".png", ".svg"):
            raise ValueError(f"figure must end in .png or .svg, got {path.name!r}")
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
    return fig
