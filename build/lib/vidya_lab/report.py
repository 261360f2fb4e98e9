"""Presenting a plan to people: a readable table and the one-page figure for finance.

No numbers are computed here: everything shown comes from :func:`vidya_lab.plan.plan`'s result.
"""

from __future__ import annotations

from pathlib import Path

from vidya_lab import _validate as v


def _pct(x) -> str:
    return "n/a" if x is None else f"{x:.2%}"


def _money(x: float) -> str:
    return f"${x:,.0f}"


def _gpus(n: int) -> str:
    return f"{n} GPU" + ("" if n == 1 else "s")


def _fig_money(x: float) -> str:
    return f"USD {x:,.0f}"  # matplotlib would read "$…$" as mathematics


def _peak(result: dict) -> float:
    s = result["scenario"]
    return s["normal_peak_rps"] * (s["exam_multiplier"] if result["day"] == "exam" else 1)


def _headline(result: dict) -> list[str]:
    s, k = result["scenario"], result["monthly_cost_by_kind"]
    flag = "  (EXTRAPOLATED: no timing rows for this GPU)" if result["extrapolated"] else ""
    sp = result["spares_by_failure"]
    return [
        f"  rent           {result['gpus']} x {result['gpu']} at the peak "
        f"({result['replicas_peak']} replicas of TP{result['tp']} x PP{result['pp']}, "
        f"{result['precision']}, {result['budget_tokens']:,}-token budget){flag}",
        f"  spares         N + {sp['node']} at the peak against losing a node of "
        f"{result['failure_domain']} GPUs (N + {sp['replica']} against one replica); the hour "
        f"after losing a node: {_pct(result['node_loss_attainment'])}",
        f"  survives       a day {result['traffic_margin']:.0%} busier than forecast at "
        f"{_pct(result['attainment'])} (target {_pct(s['attainment_target'])}), "
        f"isolation {result['isolation']}",
        f"  year           {_money(result['yearly_cost'])}: exam month "
        f"{_money(result['monthly_cost_exam'])}, normal month "
        f"{_money(result['monthly_cost_normal'])}; {_gpus(result['reserved_gpus'])} reserved for "
        f"the year",
        f"  exam month     {_money(result['monthly_cost'])}: reserved {_money(k['reserved'])} + on "
        f"demand {_money(k['on_demand'])} ({result['on_demand_gpu_hours']:,.0f} GPU-hours) + "
        f"spot {_money(k['spot'])}; all on demand would be "
        f"{_money(result['monthly_cost_all_on_demand'])}",
        f"  TTFT           p50 {result['ttft_s']['p50']:.3f} s   p99 {result['ttft_s']['p99']:.3f} s"
        f"   (target {s['ttft_target_s']:g} s)",
        f"  TPOT           p50 {result['tpot_s']['p50'] * 1e3:.1f} ms  "
        f"p99 {result['tpot_s']['p99'] * 1e3:.1f} ms  (target {s['tpot_target_s'] * 1e3:g} ms)",
        f"  ITL            p99 {result['itl_p99_s'] * 1e3:.0f} ms at the busiest replica after a "
        f"node loss (target: no gap over {result['itl_target_s'] * 1e3:.0f} ms)",
        f"  forecast day   attainment {_pct(result['forecast_attainment'])}, 7 am rush "
        f"{_pct(result['forecast_rush_attainment'])}",
        f"  cold start     {result['cold_start_s'] / 60:.1f} min from 'scale up' to serving "
        f"(prefix warm-up included)",
        f"  prefix cache   {'counted' if result['prefix_cache_counted'] else 'not counted'} "
        f"({result['prefix_cached_tokens']:,} tokens a request): "
        f"TTFT {result['prefix_cache']['ttft_s_cold_cache']:.3f} s cold, "
        f"{result['prefix_cache']['ttft_s_warm_cache']:.3f} s warm",
    ]


def _alternative_lines(result: dict) -> list[str]:
    lines = ["", "  Why it wins (alternatives):"]
    for a in result.get("alternatives", []):
        why = (f"fails {a['fails']}: {a['detail']}" if a["fails"] else
               f"+{_money(a['extra_cost_per_year'])} a year ({a['detail']})"
               if a["extra_cost_per_year"] is not None else a["detail"])
        lines.append(f"    {a['what']}: {why}")
    return lines


def _risk_lines(risks: dict) -> list[str]:
    lines = [
        "", "  Risks:",
        f"    traffic {risks['traffic_factor'] - 1:.0%} above forecast: attainment "
        f"{_pct(risks['attainment_above_forecast'])}; first to slip: {risks['breaks_first']}",
        f"    reactive scaling only: 7 am rush attainment {_pct(risks['reactive_rush_attainment'])}",
    ]
    if "cold_cache_attainment" in risks:
        lines.append(f"    prefix cache cold: attainment {_pct(risks['cold_cache_attainment'])}")
    fb = risks["fallback"]
    lines += [f"    on-demand capacity ({risks['on_demand_share_of_gpu_hours']:.0%} of the year's "
              f"GPU-hours): {risks['on_demand_availability']}",
              f"    fallback: {fb['what']}: {_money(fb['extra_cost_per_year'])} a year more",
              f"    calibration: {risks['calibration']}"]
    return lines


#: Keys of :func:`vidya_lab.plan.plan`'s result the report reads first (a check, not the list).
PLAN_KEYS = ("gpu", "gpus", "day", "policy", "scenario", "candidates", "monthly_cost",
             "yearly_cost", "alternatives", "spares_by_failure")


def _plan_result(result) -> dict:
    v.check_instance("result", result, dict, "dict (from vidya_lab.plan.plan)")
    missing = [k for k in PLAN_KEYS if k not in result]
    if missing:
        raise ValueError(f"result is not a plan (from vidya_lab.plan.plan): no {missing}")
    return result


def plan_table(result: dict) -> str:
    """The plan as plain text: the answer first, then latencies, money, candidates and risks."""
    s = _plan_result(result)["scenario"]
    lines = [f"Plan for {s['model_id']} on {'an exam' if result['day'] == 'exam' else 'a normal'} "
             f"day (peak {_peak(result):g} requests/s, {result['policy']} autoscaling)", "",
             *_headline(result), "",
             "  Candidates: the cheapest layout per GPU type and precision, by the calculator at "
             "the peak:"]
    for c in result["candidates"]:
        n = c["calculator_replicas"]
        lines.append(f"    {c['gpu']:<10} {c['precision']:<5} TP{c['tp']} x PP{c['pp']} "
                     f"x {n:<3} = {n * c['gpus_per_replica']:>4} GPUs  "
                     f"{_money(c['calculator_cost_per_hour'])}/h  ({c['budget_tokens']:,}-token "
                     f"budget, {c['cached_tokens']:,} tokens cached)")
    lines += _alternative_lines(result)
    if result.get("risks"):
        lines += _risk_lines(result["risks"])
    return "\n".join(lines)


def _figure_headline(ax, result: dict) -> None:
    s = result["scenario"]
    ax.axis("off")
    ax.set_title("Capacity plan for the year", loc="left", fontsize=16, fontweight="bold")
    sp = result["spares_by_failure"]
    text = (
        f"Rent up to {result['gpus']} x {result['gpu']} at the exam peak ({result['replicas_peak']} "
        f"replicas, TP{result['tp']} x PP{result['pp']}, {result['precision']}), N + {sp['node']} "
        f"against losing a node.\n"
        f"Year {_fig_money(result['yearly_cost'])}: exam month "
        f"{_fig_money(result['monthly_cost_exam'])}, normal month "
        f"{_fig_money(result['monthly_cost_normal'])}; {_gpus(result['reserved_gpus'])} "
        f"reserved.\n"
        f"A day {result['traffic_margin']:.0%} busier than forecast: {_pct(result['attainment'])} "
        f"meet TTFT, TPOT and ITL (target {_pct(s['attainment_target'])}); losing a node at its "
        f"peak: {_pct(result['node_loss_attainment'])}.\n"
        f"p99 TTFT {result['ttft_s']['p99']:.2f} s (target {s['ttft_target_s']:g} s); p99 TPOT "
        f"{result['tpot_s']['p99'] * 1e3:.0f} ms ({s['tpot_target_s'] * 1e3:g} ms); p99 ITL "
        f"{result['itl_p99_s'] * 1e3:.0f} ms ({result['itl_target_s'] * 1e3:.0f} ms); cache "
        f"{result['isolation']}.")
    ax.text(0.0, 0.9, text, va="top", fontsize=10, linespacing=1.6)


def _figure_day(ax, result: dict) -> None:
    hours = list(range(len(result["replicas_by_hour"])))
    ax.bar(hours, result["arrivals_by_hour"], color="#c6dbef", label="requests per hour (forecast)")
    ax.set_ylabel("requests per hour")
    ax.set_xlabel("hour of the day")
    twin = ax.twinx()
    twin.step(hours, result["replicas_by_hour"], where="mid", color="#08519c", lw=2,
              label="serving replicas (hourly mean)")
    twin.step(hours, result["replicas_by_hour_normal"], where="mid", color="#08519c", lw=1,
              ls="--", label="serving replicas, a normal day")
    per = result["tp"] * result["pp"]
    twin.axhline(result["reserved_gpus"] / per, color="#6a51a3", ls=":", lw=1.5,
                 label="reserved for the year")
    twin.set_ylabel("replicas")
    twin.set_ylim(bottom=0)
    ax.set_title("Traffic and the fleet over the forecast exam day", loc="left")
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    labels = ax.get_legend_handles_labels()[1] + twin.get_legend_handles_labels()[1]
    ax.legend(handles, labels, loc="upper left", fontsize=8)
    ax.set_xticks(range(0, len(hours), 2))


def _figure_attainment(ax, result: dict) -> None:
    s = result["scenario"]
    hours = list(range(len(result["per_hour_attainment"])))
    att = [a if a is not None else float("nan") for a in result["per_hour_attainment"]]
    ax.plot(hours, att, marker="o", ms=3, color="#238b45", label="attainment (margin day)")
    ax.axhline(s["attainment_target"], color="black", ls="--", lw=1, label="target")
    ax.set_ylim(0.0, 1.02)
    ax.set_ylabel("fraction meeting the SLO (axis from 0)")
    ax.set_xlabel("hour of the day")
    ax.set_title(f"SLO attainment by hour, traffic +{result['traffic_margin']:.0%}", loc="left")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_xticks(range(0, len(hours), 2))


def _figure_candidates(ax, result: dict) -> None:
    rows = [a for a in result["alternatives"] if a["yearly_cost"] is not None]
    names = [f"the plan: {result['gpu']} {result['precision']} TP{result['tp']}xPP{result['pp']}"]
    names += [a["what"][:60] for a in rows]
    costs = [result["yearly_cost"]] + [a["yearly_cost"] for a in rows]
    ax.barh(range(len(costs)), costs, color=["#08519c"] + ["#9ecae1"] * len(rows))
    ax.set_yticks(range(len(costs)), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("USD a year (lower bound where not simulated further)")
    ax.set_title("The plan against the alternatives that meet every constraint", loc="left")
    fails = [f"{a['fails']}: {a['what']}" for a in result["alternatives"] if a["fails"]]
    if fails:
        ax.text(0.0, -0.35, "Fail a constraint: " + "; ".join(fails)[:400], fontsize=6.5,
                transform=ax.transAxes, va="top", wrap=True)


def check_figure_path(name: str, path) -> Path:
    """``path`` as a writable ``.png`` or ``.svg`` file path, checked before any work (``name``:
    the parameter or option the message names)."""
    path = v.check_output_file(name, path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ValueError(f"{name} (the figure) must end in .png or .svg, got {path.name!r}")
    return path


def plan_figure(result: dict, path=None):
    """The one-page figure (a matplotlib Figure); written to ``path`` (.png or .svg) if given."""
    import matplotlib

    _plan_result(result)
    if path is not None:
        path = check_figure_path("path", path)
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(8.27, 11.0))  # A4 portrait
    grid = fig.add_gridspec(4, 1, height_ratios=[0.55, 1.3, 1.0, 1.4], hspace=0.5)
    _figure_headline(fig.add_subplot(grid[0]), result)
    _figure_day(fig.add_subplot(grid[1]), result)
    _figure_attainment(fig.add_subplot(grid[2]), result)
    _figure_candidates(fig.add_subplot(grid[3]), result)
    risks = result.get("risks")
    if risks:
        fig.text(0.08, 0.015,
                 f"Risks: traffic {risks['traffic_factor'] - 1:.0%} above forecast gives "
                 f"{_pct(risks['attainment_above_forecast'])} (first to slip: "
                 f"{risks['breaks_first'].split(' (')[0]}); reactive scaling alone: 7 am rush "
                 f"{_pct(risks['reactive_rush_attainment'])}; on-demand capacity may be short in "
                 f"exam weeks (fallback: {risks['fallback']['what']}, "
                 f"+{_fig_money(risks['fallback']['extra_cost_per_year'])} a year).", fontsize=8,
                 wrap=True)
    if path is not None:
        fig.savefig(Path(path), dpi=120, bbox_inches="tight")
        plt.close(fig)
    return fig
