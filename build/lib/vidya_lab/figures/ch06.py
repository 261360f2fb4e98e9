"""Chapter 6's figures, drawn from the package's numbers (nothing typed by hand).

* :func:`scale_up_rows` and :func:`scale_up_path` — the schematic of a scale-up: the autoscaler's
  tick, the decision, then each part of the cold start (:meth:`ColdStart.parts_s`) until the
  replica serves, as bought on demand, with its mitigations, from a warm pool and from sleep;
* :func:`fleet_figure` — replicas serving against the replicas the load needs (coarse fleet model);
* :func:`routing_figure` — each replica's prefix-cache hit rate under each router, and the GPUs
  the exam peak then needs;
* :func:`procurement_figure` — the day's replicas split into a reserved baseline and an on-demand
  burst, and a month's bill against the replicas reserved;
* :func:`failover_figure` — the surviving region's attainment after the other is lost, against the
  spare replicas each region keeps.

Each returns a matplotlib :class:`~matplotlib.figure.Figure` (no pyplot state), so tests draw them
without a display.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from vidya_lab import autoscaling, sizing
from vidya_lab.scenario import TANVI

#: The parts of a scale-up, in order: (key of ColdStart.parts_s, label, colour).
PARTS = (("provision_s", "GPU node", "#4c72b0"), ("image_pull_s", "image pull", "#55a868"),
         ("weights_load_s", "weights", "#c44e52"), ("compile_s", "compile", "#8172b2"),
         ("engine_start_s", "engine start", "#ccb974"), ("wake_s", "wake from sleep", "#937860"),
         ("first_request_s", "first request", "#64b5cd"),
         ("prefix_warm_up_s", "prefix warm-up", "#da8bc3"), ("readiness_s", "readiness", "#8c8c8c"))
#: The parts a replica taken from a warm pool still waits for (as autoscaling.pool_start_s).
WARM_POOL_PARTS = ("weights_load_s", "compile_s", "engine_start_s", "first_request_s",
                   "prefix_warm_up_s", "readiness_s")
COLOURS = {"round_robin": "#c44e52", "session_affinity": "#ccb974", "prefix_aware": "#4c72b0",
           "no cache counted": "#8c8c8c"}


def scale_up_rows(cold: autoscaling.ColdStart, replica: sizing.Replica) -> dict[str, dict]:
    """Seconds of each part of a scale-up, per way of getting the replica (row label → parts)."""
    fixed = autoscaling.mitigated(cold, "local_nvme", "slim_image", "compile_cache")
    warm = replace(cold, weights_on_nvme=True).parts_s(replica)
    return {"on demand": cold.parts_s(replica),
            "NVMe weights, slim image,\ncompile cache": fixed.parts_s(replica),
            "from a warm pool": {k: warm[k] for k in WARM_POOL_PARTS},
            "waking a sleeping engine": {"wake_s": cold.wake_s,
                                         "prefix_warm_up_s": cold.warm_up_s(replica)}}


def scale_up_path(rows: dict[str, dict], tick_s: float) -> Figure:
    """The scale-up path: up to one tick until the autoscaler decides, then each part in turn until
    the replica serves; one bar per way of getting the replica, its total at the right."""
    fig = Figure(figsize=(9.5, 3.6))
    ax = fig.subplots()
    labels = {k: (name, colour) for k, name, colour in PARTS}
    seen = set()
    for y, parts in enumerate(rows.values()):
        ax.barh(y, tick_s, left=-tick_s, color="white", edgecolor="#444", hatch="//", height=0.6)
        left = 0.0
        for key, seconds in parts.items():
            name, colour = labels[key]
            ax.barh(y, seconds, left=left, color=colour, height=0.6,
                    label=None if key in seen else name)
            seen.add(key)
            left += seconds
        ax.annotate(f"serving after {left / 60:.1f} min", (left, y), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.axvline(0.0, color="black", lw=1)
    ax.annotate("the autoscaler decides (its next tick)", (0.0, -0.45), xytext=(4, 0),
                textcoords="offset points", fontsize=8, va="bottom")
    ax.set_yticks(range(len(rows)), list(rows), fontsize=8)
    ax.invert_yaxis()
    ax.set_ylim(len(rows) - 0.4, -1.0)
    ax.set_xlabel(f"seconds after the load rose (hatched: up to one {tick_s:.0f} s tick)")
    ax.set_xlim(-tick_s * 1.5, max(sum(p.values()) for p in rows.values()) * 1.3)
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.22), frameon=False)
    fig.subplots_adjust(left=0.2, right=0.98, top=0.97, bottom=0.33)
    return fig


def fleet_figure(runs: dict[str, dict], day: str, model: autoscaling.ReplicaModel,
                 hours: tuple[float, float] | None = None) -> Figure:
    """Replicas serving over ``hours`` of the day (step lines, one per :func:`simulate_day`
    result), against the day's rate ÷ (capacity × the target utilisation) (dashed)."""
    fig = Figure(figsize=(9.5, 3.4))
    ax = fig.subplots()
    t = None
    for name, d in runs.items():
        s = d["run"].series
        ax.step(s["t_s"] / 3600.0, s["serving"], where="post", label=name, lw=1.5)
        t = s["t_s"] if t is None or s["t_s"].size > t.size else t
    need = autoscaling.day_profile(day).rate_per_s(t) / (model.capacity_rps()
                                                          * autoscaling.TARGET_UTILISATION)
    ax.plot(t / 3600.0, need, color="#444", ls="--", lw=1.2,
            label="replicas the load needs at the target utilisation")
    if hours is not None:
        ax.set_xlim(*hours)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("hour of the exam day")
    ax.set_ylabel("replicas serving")
    ax.legend(fontsize=8, loc="upper left")
    fig.subplots_adjust(left=0.07, right=0.98, top=0.96, bottom=0.15)
    return fig


def routing_figure(runs: dict, rows: list[dict]) -> Figure:
    """Left: each replica's token hit rate under each router (one dot per replica). Right: the GPUs
    the exam peak needs with each router's hit rate counted in capacity."""
    fig = Figure(figsize=(9.5, 3.4))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    rng = np.random.default_rng(0)  # only spreads the dots sideways
    for x, (name, run) in enumerate(runs.items()):
        rates = run.replica_hit_rate[~np.isnan(run.replica_hit_rate)]
        left.scatter(x + rng.uniform(-0.15, 0.15, rates.size), rates * 100, s=14,
                     color=COLOURS.get(name, "#444"))
        left.hlines(run.token_hit_rate * 100, x - 0.3, x + 0.3, color="black", lw=1.5)
    left.set_xticks(range(len(runs)), [n.replace("_", " ") for n in runs], fontsize=8)
    left.set_ylabel("prompt tokens found in the cache (%)")
    left.set_ylim(0, 100)
    left.set_title("each replica (dots) and the fleet (bar)", fontsize=9)
    names = [r["router"] for r in rows]
    gpus = [r["gpus"] for r in rows]
    bars = right.bar(range(len(rows)), gpus, color=[COLOURS.get(n, "#444") for n in names])
    for b, r in zip(bars, rows, strict=True):
        right.annotate(f"{r['gpus']}", (b.get_x() + b.get_width() / 2, b.get_height()),
                       ha="center", va="bottom", fontsize=8)
    right.set_xticks(range(len(rows)), [n.replace("_", " ").replace(" counted", "\ncounted")
                                        for n in names], fontsize=8)
    right.set_ylabel("GPUs at the exam peak")
    right.set_ylim(0, max(gpus) * 1.15)
    fig.subplots_adjust(left=0.07, right=0.99, top=0.9, bottom=0.17, wspace=0.3)
    return fig


def procurement_figure(replicas_by_hour, reserved: int, costs_by_reserved: dict[int, float]
                       ) -> Figure:
    """Left: each hour's replicas, the reserved baseline and the on-demand burst. Right: a month's
    bill (USD) against the replicas reserved, the rule's count marked."""
    hours = np.asarray(replicas_by_hour, dtype=float)
    fig = Figure(figsize=(9.5, 3.4))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.4, 1]})
    h = np.arange(24) + 0.5
    base = np.minimum(hours, reserved)
    left.bar(h, base, width=0.85, color="#4c72b0", label=f"reserved ({reserved} replicas)")
    left.bar(h, hours - base, bottom=base, width=0.85, color="#dd8452", label="on demand")
    left.set_xlim(0, 24)
    left.set_xticks(range(0, 25, 3))
    left.set_xlabel("hour of the exam day")
    left.set_ylabel("replicas in service (hour's mean)")
    left.legend(fontsize=8, loc="upper left")
    ks = sorted(costs_by_reserved)
    cost = [costs_by_reserved[k] / 1e3 for k in ks]
    right.plot(ks, cost, color="#444", marker=".", lw=1)
    right.plot([reserved], [costs_by_reserved[reserved] / 1e3], "o", color="#4c72b0",
               label="the rule's count")
    right.set_xlabel("replicas reserved")
    right.set_ylabel("a month of exam days (thousand USD)")
    right.set_ylim(0, max(cost) * 1.08)
    right.legend(fontsize=8, loc="lower right")
    fig.subplots_adjust(left=0.07, right=0.99, top=0.96, bottom=0.16, wspace=0.3)
    return fig


def failover_figure(grid: dict, target: float = TANVI.attainment_target) -> Figure:
    """The surviving region's attainment in the hour after the other is lost, against the spare
    replicas each region keeps, one line per cold start; the axis starts at zero."""
    fig = Figure(figsize=(9.5, 3.2))
    ax = fig.subplots()
    for name in dict.fromkeys(c for c, _ in grid):
        ks = sorted(k for c, k in grid if c == name)
        att = [grid[(name, k)]["attainment_after_loss"] * 100 for k in ks]
        minutes = grid[(name, ks[0])]["cold_start_s"] / 60
        ax.plot(ks, att, marker="o", label=f"{name} cold start ({minutes:.0f} min)")
    ks = sorted({k for _, k in grid})
    cost = {k: grid[next(key for key in grid if key[1] == k)]["spare_usd_per_day"] for k in ks}
    ax.set_xticks(ks, [f"{k}\n${cost[k]:,.0f}/day" for k in ks], fontsize=8)
    ax.axhline(target * 100, color="black", ls="--", lw=1, label=f"target {target:.0%}")
    ax.set_ylim(0, 102)
    ax.set_xlabel("spare replicas per region (and what both regions' spares cost a day)")
    ax.set_ylabel("attainment in the hour\nafter the loss (%)")
    ax.legend(fontsize=8, loc="lower right")
    fig.subplots_adjust(left=0.1, right=0.98, top=0.96, bottom=0.25)
    return fig
