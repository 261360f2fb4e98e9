"""Chapter 6 widget: a policy, the parts of a cold start and some headroom → the fleet over the day,
its attainment hour by hour, and the bill.

No math here: the day is :func:`vidya_lab.autoscaling.simulate_day` on Tanvi's replica (a 15 s
step, the autoscaler's tick, so a slider moves in seconds). :func:`compute_view` (numbers) and :func:`draw` (a
matplotlib figure) are plain functions that tests call without a browser; :func:`build` wires them
to controls.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.figure import Figure

from vidya_lab import autoscaling, sizing
from vidya_lab.scenario import TANVI

#: The widget's step, seconds: the autoscaler's tick (a 5 s step gives the same day).
DT_S = 15.0
SEED = 6
DEFAULTS = autoscaling.ColdStart()


@lru_cache(maxsize=1)
def _replica() -> sizing.Replica:
    gpu = TANVI.candidate_gpu_ids[0]
    return sizing.Replica(TANVI.model_id, gpu, tp=autoscaling.smallest_tp(TANVI.model_id, gpu))


@lru_cache(maxsize=1)
def _model() -> autoscaling.ReplicaModel:
    return autoscaling.replica_model(_replica())


@lru_cache(maxsize=32)
def compute_view(policy: str = "reactive", day: str = "exam",
                 provision_s: float = DEFAULTS.provision_s,
                 storage_gb_per_s: float = DEFAULTS.storage_bytes_per_s / 1e9,
                 registry_mb_per_s: float = DEFAULTS.registry_bytes_per_s / 1e6,
                 engine_start_s: float = DEFAULTS.engine_start_s, headroom: int = 0) -> dict:
    """Everything the widget shows, as numbers.

    Returns ``cold_parts_s`` (dict), ``cold_start_s``, ``t_h`` (hours), ``serving`` and ``billed``
    (replicas per step), ``demand`` (arrival rate ÷ one replica's capacity at the target
    utilisation, per step), ``per_hour_attainment`` (24 values, None for an empty hour),
    ``attainment``, ``rush_attainment``, ``gpu_hours``, ``cost_usd``, ``max_replicas`` and the inputs.
    """
    cold = autoscaling.ColdStart(provision_s=float(provision_s),
                                 storage_bytes_per_s=float(storage_gb_per_s) * 1e9,
                                 registry_bytes_per_s=float(registry_mb_per_s) * 1e6,
                                 engine_start_s=float(engine_start_s))
    d = autoscaling.simulate_day(_replica(), day=day, policy=policy, cold_start=cold, seed=SEED,
                                 dt_s=DT_S, headroom=int(headroom), model=_model())
    s = d["summary"]
    series = d["run"].series
    t = series["t_s"]
    rate = autoscaling.day_profile(day).rate_per_s(t)
    per_replica = _model().capacity_rps() * autoscaling.TARGET_UTILISATION
    return {"policy": policy, "day": day, "headroom": int(headroom),
            "cold_parts_s": cold.parts_s(_replica()), "cold_start_s": d["cold_start_s"],
            "t_h": t / 3600.0, "serving": series["serving"], "billed": series["billed"],
            "demand": rate / per_replica, "per_hour_attainment": s["per_hour_attainment"],
            "attainment": s["attainment"], "rush_attainment": s["rush_attainment"],
            "gpu_hours": s["gpu_hours"], "cost_usd": s["cost"], "max_replicas": s["max_replicas"]}


def draw(view: dict, fig: Figure | None = None) -> Figure:
    """Replicas against demand over the day, attainment by hour; the bill in the title."""
    fig = fig or Figure(figsize=(9.5, 5.2))
    fig.clear()
    ax1, ax2 = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    ax1.plot(view["t_h"], view["demand"], color="#999", lw=1.5,
             label="replicas the load needs (at the target utilisation)")
    ax1.step(view["t_h"], view["billed"], where="post", color="#c83", lw=1.2,
             label="replicas billed (starting, serving, draining)")
    ax1.step(view["t_h"], view["serving"], where="post", color="#246", lw=1.8,
             label="replicas serving")
    ax1.set_ylabel("replicas")
    ax1.legend(loc="upper left", fontsize=8)
    hours = np.arange(24)
    att = np.array([np.nan if x is None else x for x in view["per_hour_attainment"][:24]])
    colors = ["#c33" if x < TANVI.attainment_target else "#6a6" for x in np.nan_to_num(att, nan=1)]
    ax2.bar(hours + 0.5, np.nan_to_num(att, nan=0.0), width=0.8, color=colors)
    ax2.axhline(TANVI.attainment_target, color="black", ls="--", lw=1)
    low = float(np.nanmin(att)) if np.any(~np.isnan(att)) else 0.9
    ax2.set_ylim(min(low, TANVI.attainment_target) - 0.01, 1.0005)
    ax2.set_ylabel("attainment")
    ax2.set_xlabel("hour of the day")
    ax2.set_xlim(0, 24)
    fig.suptitle(f"{view['day']} day, {view['policy']}, N+{view['headroom']}: cold start "
                 f"{view['cold_start_s'] / 60:.1f} min; attainment {view['attainment']:.2%} "
                 f"(rush {view['rush_attainment']:.2%}); {view['gpu_hours']:,.0f} GPU-hours = "
                 f"${view['cost_usd']:,.0f}", fontsize=10)
    fig.tight_layout()
    return fig


def build():
    """The widget: policy, day, cold-start parts and headroom; the figure below."""
    import ipywidgets as widgets
    from IPython.display import display

    style = {"description_width": "14em"}
    layout = widgets.Layout(width="36em")
    policy = widgets.Dropdown(options=autoscaling.POLICIES, value="reactive",
                              description="policy", style=style, layout=layout)
    day = widgets.Dropdown(options=autoscaling.DAYS, value="normal", description="day",
                           style=style, layout=layout)
    prov = widgets.FloatSlider(value=DEFAULTS.provision_s, min=0.0, max=600.0, step=10.0,
                               description="node provisioning (s)", style=style, layout=layout)
    storage = widgets.FloatLogSlider(value=DEFAULTS.storage_bytes_per_s / 1e9, base=10, min=-1,
                                     max=1, step=0.05, description="weights bandwidth (GB/s)",
                                     style=style, layout=layout)
    registry = widgets.FloatLogSlider(value=DEFAULTS.registry_bytes_per_s / 1e6, base=10, min=1,
                                      max=3.5, step=0.05, description="image pull (MB/s)",
                                      style=style, layout=layout)
    engine = widgets.FloatSlider(value=DEFAULTS.engine_start_s, min=0.0, max=300.0, step=5.0,
                                 description="engine start (s)", style=style, layout=layout)
    head = widgets.IntSlider(value=0, min=0, max=5, description="headroom (N+k)", style=style,
                             layout=layout)
    out = widgets.Output()
    controls = (policy, day, prov, storage, registry, engine, head)

    def update(_change=None):
        fig = draw(compute_view(policy.value, day.value, prov.value, storage.value,
                                registry.value, engine.value, head.value))
        out.clear_output(wait=True)
        with out:
            display(fig)

    for w in controls:
        w.observe(update, names="value")
    update()
    return widgets.VBox([*controls, out])
