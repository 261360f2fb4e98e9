"""The fluid fleet: the day as a flow of expected requests, fast enough for a widget.

The third fidelity (after :mod:`vidya_lab.admission` and
:func:`~vidya_lab.autoscaling.simulate.simulate_fleet`; see :mod:`vidya_lab.autoscaling.fidelity`),
for a control that must answer in well under 100 ms: no request of its own. Each autoscaler tick,
the day's curve gives the expected arrivals; the serving replicas serve up to their coarse model's
highest steady rate each and the rest waits in one fluid queue; the replicas start, serve, drain
and are billed under the same :class:`~vidya_lab.autoscaling.autoscaler.Autoscaler` and policy
objects as the simulation; and a tick's attainment is one replica's steady attainment at the tick's
per-replica load (:func:`fluid_curve`, measured once by the coarse simulator on one replica),
zeroed when the queue's wait pushes TTFT past its target.

It leaves out Poisson noise, failures and the router. On Tanvi's normal and exam days, for each
policy, it lands within about one replica of the simulation hour by hour and within half a point
of rush attainment (``tests/test_autoscaling_fluid.py`` asserts the bounds). The chapter's printed
numbers come from the simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vidya_lab import _validate as v
from vidya_lab import sizing, slo
from vidya_lab.autoscaling.autoscaler import Autoscaler, Signals, check_policy, starting_fleet
from vidya_lab.autoscaling.cold_start import pool_refill_s
from vidya_lab.autoscaling.day import (
    RUSH_HOURS,
    SECONDS_PER_DAY,
    SECONDS_PER_HOUR,
    check_hours,
    day_profile,
    day_workload,
    tutor_slo,
)
from vidya_lab.autoscaling.fleet import MAX_STEPS, Fleet
from vidya_lab.autoscaling.policies import TARGET_UTILISATION, Scheduled
from vidya_lab.autoscaling.replica import ReplicaModel
from vidya_lab.scenario import TANVI
from vidya_lab.workload import DiurnalProfile

#: Per-replica loads (utilisation: rate ÷ :meth:`ReplicaModel.capacity_rps`) at which
#: :func:`fluid_curve` measures one replica, and the seconds of steady load it simulates at each.
FLUID_CURVE_UTILISATIONS = tuple(np.round(np.arange(0.0, 1.2001, 0.05), 2))
FLUID_CURVE_S = 1800.0
#: The longest window a fluid day may span (seconds): 30 days (its arrivals are integrated on a
#: one-second grid, 8 bytes a second).
MAX_FLUID_HORIZON_S = 30 * SECONDS_PER_DAY


def fluid_curve(model: ReplicaModel, ttft_target_s: float = TANVI.ttft_target_s,
                tpot_target_s: float = TANVI.tpot_target_s,
                itl_target_s: float | None = None) -> dict:
    """One replica's behaviour against its steady load, the tables :func:`simulate_fluid` reads.

    ``max_rate_per_s``: the largest steady rate the coarse model keeps up with (its
    :meth:`~ReplicaModel.steady_state` exists), requests/s. For each load ``u`` in
    :data:`FLUID_CURVE_UTILISATIONS` (rate ``u × capacity_rps``): ``attainment[u]``, the share of
    requests within the targets (with ``itl_target_s``, the longest gap too: the replica model's
    stated tail) when :func:`~vidya_lab.autoscaling.simulate.simulate_fleet` runs
    one replica under :data:`FLUID_CURVE_S` seconds of steady Poisson arrivals (seed 0, 15 s step;
    the fluid model's one random input, measured once per replica model), and ``batch[u]`` and
    ``ttft_s[u]``, the steady state's mean batch (sequences) and mean TTFT (seconds; at loads it
    cannot keep up with, the last ones it can). Returns those arrays with ``utilisation``.
    """
    v.check_instance("model", model, ReplicaModel, "ReplicaModel (see replica_model)")
    ttft = v.check_real("ttft_target_s", ttft_target_s, minimum=0.0, min_inclusive=False)
    tpot = v.check_real("tpot_target_s", tpot_target_s, minimum=0.0, min_inclusive=False)
    itl = None if itl_target_s is None else v.check_real("itl_target_s", itl_target_s,
                                                          minimum=0.0, min_inclusive=False)
    # two models of the same replica and lengths share one curve (it costs ~2 s to measure)
    key = (model.replica, model.prompt_tokens_mean, model.output_tokens_mean, model.slots,
           model.cached_prefix_tokens, model.tpot_target_s, model.ttft_target_s, ttft, tpot, itl)
    if key not in _CURVES:
        if len(_CURVES) >= 16:
            _CURVES.pop(next(iter(_CURVES)))
        _CURVES[key] = _measured_curve(model, slo.SLO(ttft_s=ttft, tpot_s=tpot, itl_s=itl))
    return _CURVES[key]


_CURVES: dict[tuple, dict] = {}


def _measured_curve(model: ReplicaModel, target: slo.SLO) -> dict:
    from vidya_lab.autoscaling.simulate import simulate_fleet

    cap = model.capacity_rps()
    lo, hi = cap, 4.0 * cap
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if model.steady_state(mid) is not None else (lo, mid)
    u = np.array(FLUID_CURVE_UTILISATIONS, dtype=float)
    att, batch, ttft = np.ones(u.size), np.zeros(u.size), np.full(u.size, model.overhead_s)
    fleet = Fleet(model, min_replicas=1, max_replicas=1)
    for i, x in enumerate(u):
        st = model.steady_state(min(x * cap, lo))
        batch[i], ttft[i] = st["batch"], st["ttft_s"]
        if x > 0.0:
            prof = DiurnalProfile(hours=(0.0, 12.0), relative=(1.0, 1.0), peak_rate_per_s=x * cap)
            run = simulate_fleet(day_workload(prof, seed=0, duration_s=FLUID_CURVE_S), fleet,
                                 Scheduled((1,) * 24), dt_s=15.0, initial_replicas=1)
            att[i] = float(np.mean(run.meets(target)))
    return {"utilisation": u, "attainment": att, "batch": batch, "ttft_s": ttft,
            "max_rate_per_s": lo}


@dataclass(frozen=True, eq=False)
class FluidRun:
    """What :func:`simulate_fluid` found: the fleet tick by tick, with no request of its own.

    Attributes
    ----------
    series : per tick arrays: ``t_s`` (tick start, seconds), ``serving``, ``starting``,
        ``draining``, ``pool``, ``billed`` (replicas), ``arrivals`` (expected requests arriving in
        the tick), ``waiting`` (the fluid queue at the tick's end, requests), ``rejected``
        (requests turned away in the tick), ``utilisation`` (the package's one utilisation,
        rate ÷ (serving × capacity_rps), of the rate the serving replicas carry: the offered rate
        while nobody waits, the served one when a queue holds the rest) and ``attainment`` (0..1,
        the share of the tick's arrivals within the SLO).
    gpu_hours, cost_usd : the bill, GPU-hours and USD.
    start_s, dt_s, horizon_s : replica start time (no pool), tick and end of the window, seconds.
    fleet, policy : the inputs.
    """

    series: dict
    gpu_hours: float
    cost_usd: float
    start_s: float
    dt_s: float
    horizon_s: float
    fleet: Fleet
    policy: object

    def _share(self, sel: np.ndarray) -> float | None:
        arr = self.series["arrivals"][sel]
        total = float(arr.sum())
        return float(np.sum(arr * self.series["attainment"][sel]) / total) if total > 0 else None

    def hourly(self) -> list[dict]:
        """Per hour of the window: ``hour``, ``arrived`` (expected requests), ``attainment``
        (``None`` if nothing arrived), ``replicas_mean`` (serving, time average),
        ``replicas_max`` (serving + starting + draining) and ``gpu_hours``."""
        s = self.series
        nh = max(1, int(math.ceil(self.horizon_s / SECONDS_PER_HOUR)))
        sh = np.minimum(np.floor(s["t_s"] / SECONDS_PER_HOUR).astype(np.int64), nh - 1)
        size = s["serving"] + s["starting"] + s["draining"]
        per_gpu = self.dt_s / SECONDS_PER_HOUR * self.fleet.model.replica.n_gpus
        out = []
        for h in range(nh):
            sel = sh == h
            out.append({"hour": h, "arrived": float(s["arrivals"][sel].sum()),
                        "attainment": self._share(sel) if s["arrivals"][sel].sum() > 0 else None,
                        "replicas_mean": float(s["serving"][sel].mean()) if sel.any() else 0.0,
                        "replicas_max": int(size[sel].max()) if sel.any() else 0,
                        "gpu_hours": float(s["billed"][sel].sum() * per_gpu)})
        return out

    def rush_attainment(self, hours: tuple[float, float] = RUSH_HOURS) -> float | None:
        """Attainment (0..1) of the arrivals in the morning rush (hours of the day)."""
        start, end = check_hours("hours", hours)
        hod = np.mod(self.series["t_s"] / SECONDS_PER_HOUR, 24.0)
        return self._share((hod >= start) & (hod < end))

    def summary(self) -> dict:
        """The keys of :func:`~vidya_lab.autoscaling.metrics.summary` that a fluid fleet has:
        ``arrived`` and ``rejected`` (expected requests), ``attainment``, ``rush_attainment``,
        ``gpu_hours``, ``cost``, ``max_replicas``, ``cold_start_s``, ``per_hour_attainment``,
        ``replicas_by_hour``."""
        s = self.series
        hrs = self.hourly()
        size = s["serving"] + s["starting"] + s["draining"]
        return {"arrived": float(s["arrivals"].sum()), "rejected": float(s["rejected"].sum()),
                "attainment": self._share(np.ones(s["t_s"].size, dtype=bool)),
                "rush_attainment": self.rush_attainment(), "gpu_hours": self.gpu_hours,
                "cost": self.cost_usd, "max_replicas": int(size.max()) if size.size else 0,
                "cold_start_s": self.start_s,
                "per_hour_attainment": [h["attainment"] for h in hrs],
                "replicas_by_hour": [h["replicas_mean"] for h in hrs]}


def _expected_arrivals(prof: DiurnalProfile, start: float, horizon: float, n_ticks: int,
                       dt: float):
    """Expected arrivals per tick and a function giving those in ``[start, x)``: the day's curve
    integrated on a 1 s grid (trapezoids), none outside the window."""
    grid = np.arange(0.0, n_ticks * dt + 1.0, 1.0)
    rate = prof.rate_per_s(grid)
    cum = np.concatenate(([0.0], np.cumsum(0.5 * (rate[1:] + rate[:-1]))))

    def arrived_by(x):
        return np.interp(np.clip(x, start, horizon), grid, cum) - np.interp(start, grid, cum)

    t = np.arange(n_ticks) * dt
    return np.diff(arrived_by(np.append(t, n_ticks * dt))), arrived_by


class _FluidFleet:
    """Replica counts tick by tick: the lifecycle of :mod:`~vidya_lab.autoscaling.replicas` as
    numbers (ready times of starting replicas, release times of draining ones) and the pool."""

    def __init__(self, fleet: Fleet, init: int, drain_s: float) -> None:
        self.fleet, self.drain_s = fleet, drain_s
        model = fleet.model
        self.pool_size = fleet.pool_size if fleet.pool != "none" else 0
        self.refill_s = pool_refill_s(fleet.cold_start, model.replica, fleet.pool) \
            if self.pool_size else 0.0
        self.serving, self.starting, self.draining = init, [], []
        self.pool_ready, self.refills = self.pool_size, []

    def advance(self, t0: float) -> None:
        """Cold starts that are over serve; drained replicas are released; the pool refills."""
        if self.starting and self.starting[0] <= t0:
            ready = sum(1 for x in self.starting if x <= t0)
            self.serving += ready
            self.starting = self.starting[ready:]
        if self.draining and self.draining[0] <= t0:
            gone = sum(1 for x in self.draining if x <= t0)
            self.draining = self.draining[gone:]
            for _ in range(gone if self.pool_size else 0):  # back to the pool if it has room
                if self.pool_ready + len(self.refills) < self.pool_size:
                    self.pool_ready += 1
        if self.refills and self.refills[0] <= t0:
            back = sum(1 for x in self.refills if x <= t0)
            self.pool_ready += back
            self.refills = self.refills[back:]

    def scale(self, t0: float, want: int) -> None:
        """Start (from the pool first), cancel (the latest to be ready first) or drain replicas."""
        current = self.serving + len(self.starting)
        if want > current:
            for _ in range(want - current):
                if self.pool_ready > 0:
                    self.pool_ready -= 1
                    self.refills.append(t0 + self.refill_s)
                    self.starting.append(t0 + self.fleet.pool_start_s)
                else:
                    self.starting.append(t0 + self.fleet.start_s)
            self.starting.sort()
        elif want < current:
            excess = current - want
            cancel = min(excess, len(self.starting))
            self.starting = self.starting[:len(self.starting) - cancel]
            drain = min(excess - cancel, self.serving)
            self.serving -= drain
            self.draining.extend([t0 + self.drain_s] * drain)


def _fluid_signals(live, serving: int, last_rate: float, queue: float, rate: float, model,
                   curve: dict) -> Signals:
    """What a reactive rule sees of a fluid fleet: the steady batch at the last tick's served
    load, the fluid queue, and KV tokens of sequences of mean length half-way through."""
    act = queued = 0
    kv = 0.0
    if live.metric != "utilisation" and serving:
        load = min(last_rate, serving * curve["max_rate_per_s"])
        act = int(round(serving * float(np.interp(load / (serving * model.capacity_rps()),
                                                  curve["utilisation"], curve["batch"]))))
        mean_kv = model.prompt_tokens_mean + (model.output_tokens_mean - 1.0) / 2.0
        queued, kv = int(round(queue)), act * mean_kv
    return Signals(serving, act, queued, kv, rate)


def _check_fluid(day, fleet, policy, horizon_s, start_s):
    prof = day_profile(day)
    v.check_instance("fleet", fleet, Fleet, "Fleet")
    check_policy(policy)
    if fleet.mtbf_s is not None or fleet.failures_at_s:
        raise ValueError("simulate_fluid has no failures: leave mtbf_s and failures_at_s unset "
                         "(use simulate_fleet for failures)")
    start = v.check_real("start_s", start_s, minimum=0.0)
    horizon = v.check_real("horizon_s", horizon_s, minimum=start, min_inclusive=False,
                           maximum=MAX_FLUID_HORIZON_S)
    n_ticks = int(math.ceil(horizon / fleet.interval_s))
    v.check_work("a fluid day of horizon_s / interval_s", n_ticks, MAX_STEPS, unit="ticks",
                 hint="a shorter window or a longer Fleet.interval_s")
    return prof, start, horizon, n_ticks


def simulate_fluid(day: str | DiurnalProfile, fleet: Fleet, policy, *,
                   horizon_s: float = SECONDS_PER_DAY, start_s: float = 0.0,
                   initial_replicas: int | None = None,
                   target: slo.SLO | None = None) -> FluidRun:
    """The fleet over ``[start_s, horizon_s)`` of a day as a fluid: no request of its own.

    It ticks at the autoscaler's ``interval_s`` (module docstring):

    * arrivals: the day's curve integrated over the tick (deterministic: the expected requests);
    * replicas: the same states, cold starts, pool and autoscaler as the simulation; a draining
      replica is billed for twice a mean request's end-to-end time at :data:`TARGET_UTILISATION`;
    * serving: ``serving × max_rate`` requests/s at most (:func:`fluid_curve`); what is beyond
      waits in one fluid queue, and what would wait longer than ``queue_timeout_s`` is turned away;
    * attainment of a tick's arrivals: one replica's steady attainment at the tick's per-replica
      utilisation (:func:`fluid_curve`, linear between its points), or 0 when the queue's wait
      (waiting ÷ service rate) plus the steady TTFT exceeds the TTFT target.

    Failures (``mtbf_s``, ``failures_at_s``) must be unset. A reactive rule (a ``Reactive`` policy
    or a ``Predictive`` one's live floor) on ``queue`` or ``kv`` sees the fluid queue and the
    steady batch. Limits: ``horizon_s`` ≤ :data:`MAX_FLUID_HORIZON_S`, ticks ≤ ``MAX_STEPS``.
    """
    prof, start, horizon, n_ticks = _check_fluid(day, fleet, policy, horizon_s, start_s)
    target = tutor_slo() if target is None else v.check_instance("target", target, slo.SLO)
    model = fleet.model
    curve = fluid_curve(model, float(target.ttft_s), float(target.tpot_s), target.itl_s)
    cap, mu, dt = model.capacity_rps(), curve["max_rate_per_s"], fleet.interval_s
    arrivals, arrived_by = _expected_arrivals(prof, start, horizon, n_ticks, dt)
    t = np.arange(n_ticks) * dt
    init = starting_fleet(fleet, policy, initial_replicas)
    autoscaler = Autoscaler(fleet, policy, init)
    live = autoscaler.live_policy
    if live is not None:
        w = live.rate_window_s
        seen_rate = (arrived_by(t) - arrived_by(t - w)) / np.minimum(w, np.maximum(t, dt))
    st = model.steady_state(TARGET_UTILISATION * cap)
    ff = _FluidFleet(fleet, init, 2.0 * (st["ttft_s"] + (model.output_tokens_mean - 1.0)
                                         * st["tpot_s"]))
    queue = 0.0
    rec = np.zeros((n_ticks, 7))  # serving, starting, draining, pool, waiting, rejected, served
    for k in range(n_ticks):
        t0 = k * dt
        ff.advance(t0)
        seen = Signals(ff.serving) if live is None else _fluid_signals(
            live, ff.serving, float(arrivals[k - 1]) / dt if k else 0.0, queue,
            float(seen_rate[k]), model, curve)
        ff.scale(t0, autoscaler.want(t0, ff.serving + len(ff.starting), seen))
        # the fluid queue: serve up to serving × mu this tick, turn away what would wait too long
        backlog = queue + float(arrivals[k])
        served = min(backlog, ff.serving * mu * dt)
        queue = backlog - served
        keep = ff.serving * mu * fleet.queue_timeout_s if ff.serving else float(arrivals[k])
        rejected = max(queue - keep, 0.0)
        queue -= rejected
        rec[k] = (ff.serving, len(ff.starting), len(ff.draining), ff.pool_ready + len(ff.refills),
                  queue, rejected, served)
    return _fluid_run(rec, t, arrivals, curve, target, fleet, policy, horizon)


def _fluid_run(rec, t, arrivals, curve, target, fleet, policy, horizon) -> FluidRun:
    """Each tick's utilisation and attainment from the curve, and the bill."""
    model, dt = fleet.model, fleet.interval_s
    cap, mu = model.capacity_rps(), curve["max_rate_per_s"]
    n_serv = rec[:, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        util = np.where(n_serv > 0, rec[:, 6] / dt / (n_serv * cap), 0.0)
        wait = np.where(n_serv > 0, rec[:, 4] / (n_serv * mu), np.inf)
    att = np.interp(util, curve["utilisation"], curve["attainment"])
    ttft = np.interp(util, curve["utilisation"], curve["ttft_s"])
    att = np.where((n_serv > 0) & (wait + ttft <= target.ttft_s), att, 0.0)
    billed = rec[:, 0] + rec[:, 1] + rec[:, 2] + rec[:, 3]
    replica_hours = float(billed.sum()) * dt / SECONDS_PER_HOUR
    series = {"t_s": t, "serving": rec[:, 0].astype(np.int64),
              "starting": rec[:, 1].astype(np.int64), "draining": rec[:, 2].astype(np.int64),
              "pool": rec[:, 3].astype(np.int64), "billed": billed.astype(np.int64),
              "arrivals": arrivals, "waiting": rec[:, 4], "rejected": rec[:, 5],
              "utilisation": util, "attainment": att}
    return FluidRun(series, replica_hours * model.replica.n_gpus,
                    replica_hours * sizing.cost_per_hour_usd(model.replica), fleet.start_s, dt,
                    horizon, fleet, policy)
