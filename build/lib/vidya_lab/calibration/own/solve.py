"""Fitting a deployment's own calibration: bounded least squares on log(predicted/measured).

The objective weighs every kind of observation the same, however many conditions it has::

    J = (1/K) · Σ_kinds (1/N_k) · Σ_{i in kind k} log(predicted_i / measured_i)²

and √J is the *kind-averaged RMS log error* reported everywhere (0.01 ≈ 1 % typical error).

The search is Levenberg–Marquardt on coordinates scaled to [0, 1] over each parameter's plausible
range (log scale for a range above 0, linear for one starting at 0), with steps projected onto the
box and a finite-difference Jacobian: a handful of parameters and tens of observations converge
in a few dozen evaluations, where the published fit's coordinate search
(:func:`vidya_lab.calibration.fit.fit`, built for hundreds of replayed rows and loose tolerances)
would creep along the narrow valleys that correlated parameters make here. It starts from the
published values and from the middle of the box and keeps the better.

Identifiability (:func:`profile`): each coordinate is pinned in turn at :data:`GRID` points across
its range while the others are refitted; the rise of √J over its best value is the parameter's
profile. A parameter is pinned by the data when forcing it somewhere in its range worsens √J by
at least :func:`threshold`: :data:`RISE_THRESHOLD` (0.2 percentage points) and at least half of
the fit's own error (:data:`RISE_FRACTION` × the best √J), so that noisier data must show a
clearer rise before they are said to pin a parameter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

#: √J must rise by at least this much somewhere in a parameter's range for the data to pin it...
RISE_THRESHOLD = 0.002
#: ... and by at least this fraction of the best fit's own √J.
RISE_FRACTION = 0.5
#: Points of each profile across its range (ends included).
GRID = 9
#: Levenberg–Marquardt: most iterations, finite-difference step (unit coordinates), tolerance.
MAX_ITERATIONS = 80
FD_STEP = 1e-6
TOLERANCE = 1e-15


@dataclass(frozen=True)
class Coord:
    """One searched coordinate: a name and its plausible range; log-scaled when ``low > 0``."""

    name: str
    low: float
    high: float

    @property
    def log(self) -> bool:
        return self.low > 0

    def to_unit(self, x: float) -> float:
        x = min(self.high, max(self.low, x))
        if self.log:
            return math.log(x / self.low) / math.log(self.high / self.low)
        return (x - self.low) / (self.high - self.low)

    def from_unit(self, u: float) -> float:
        u = min(1.0, max(0.0, u))
        if self.log:
            return self.low * (self.high / self.low) ** u
        return self.low + u * (self.high - self.low)


def weights(kinds: Sequence[str]) -> np.ndarray:
    """√ of each observation's weight in J: 1/√(K·N_kind)."""
    count = {k: kinds.count(k) for k in set(kinds)}
    return np.array([1.0 / math.sqrt(len(count) * count[k]) for k in kinds])


class Problem:
    """Residuals of a set of observations as a function of the unit coordinates."""

    def __init__(self, coords: Sequence[Coord], residuals: Callable[[dict], np.ndarray]):
        self.coords = tuple(coords)
        self._residuals = residuals
        self.evaluations = 0

    def values(self, u: np.ndarray) -> dict:
        return {c.name: c.from_unit(float(x)) for c, x in zip(self.coords, u, strict=True)}

    def residuals(self, u: np.ndarray) -> np.ndarray:
        self.evaluations += 1
        res = self._residuals(self.values(u))
        return res if np.all(np.isfinite(res)) else np.full(res.shape, np.inf)


def _jacobian(p: Problem, u: np.ndarray, res: np.ndarray, free: np.ndarray) -> np.ndarray:
    jac = np.zeros((res.size, u.size))
    for j in np.flatnonzero(free):
        h = FD_STEP if u[j] + FD_STEP <= 1.0 else -FD_STEP
        v = u.copy()
        v[j] += h
        jac[:, j] = (p.residuals(v) - res) / h
    return jac


def solve(p: Problem, u0: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, float]:
    """Minimise J over the ``free`` unit coordinates from ``u0`` (the others fixed); (u, J)."""
    u = np.clip(np.asarray(u0, dtype=float), 0.0, 1.0)
    res = p.residuals(u)
    cost = float(res @ res)
    lam = 1e-3
    for _ in range(MAX_ITERATIONS):
        if not free.any() or not math.isfinite(cost) or cost < 1e-24:
            break
        jac = _jacobian(p, u, res, free)
        grad = jac.T @ res
        active = free & ~(((u <= 0.0) & (grad > 0)) | ((u >= 1.0) & (grad < 0)))
        if not active.any():
            break
        a = jac[:, active]
        hess = a.T @ a
        improved = False
        for _ in range(12):
            damp = hess + lam * np.diag(np.diag(hess) + 1e-12)
            try:
                step = np.linalg.solve(damp, -grad[active])
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            trial = u.copy()
            trial[active] = np.clip(u[active] + step, 0.0, 1.0)
            t_res = p.residuals(trial)
            t_cost = float(t_res @ t_res)
            if t_cost < cost:
                done = cost - t_cost <= TOLERANCE * (1.0 + cost)
                u, res, cost, improved = trial, t_res, t_cost, True
                lam = max(lam / 3.0, 1e-9)
                break
            lam *= 4.0
        if not improved or done:
            break
    return u, cost


def best_fit(p: Problem, starts: Sequence[np.ndarray],
             free: np.ndarray) -> tuple[np.ndarray, float]:
    """:func:`solve` from each start; the lowest J (the first on a tie)."""
    best = None
    for s in starts:
        u, cost = solve(p, s, free)
        if best is None or cost < best[1] - 1e-18:
            best = (u, cost)
    return best


def threshold(rms_best: float) -> float:
    """The rise of √J that pins a parameter: max(:data:`RISE_THRESHOLD`, :data:`RISE_FRACTION` ×
    the best √J)."""
    return max(RISE_THRESHOLD, RISE_FRACTION * rms_best)


def profile(p: Problem, u_best: np.ndarray, cost_best: float, free: np.ndarray) -> dict:
    """For each free coordinate: its value at each :data:`GRID` point of its range with the others
    refitted, √J there, and the rise of √J over the best fit.

    Returns ``{name: {"values", "rms_log_error", "max_rise", "unpredictable_at",
    "consistent_low", "consistent_high"}}``; the consistent interval holds the grid points (and
    the best value) whose rise is below :func:`threshold`; ``unpredictable_at`` the grid values at which
    some observation could not be predicted (nothing fits), where √J is ``None``.
    """
    out = {}
    rms_best = math.sqrt(cost_best)
    limit = threshold(rms_best)
    for j in np.flatnonzero(free):
        c = p.coords[j]
        others = free.copy()
        others[j] = False
        values, rms = [], []
        for g in np.linspace(0.0, 1.0, GRID):
            start = u_best.copy()
            start[j] = g
            _, cost = solve(p, start, others)
            values.append(c.from_unit(g))
            rms.append(math.sqrt(cost) if math.isfinite(cost) else math.inf)
        rise = [x - rms_best for x in rms]
        ok = [x for x, d in zip(values, rise, strict=True) if d < limit]
        ok.append(c.from_unit(u_best[j]))
        failed = [x for x, d in zip(values, rms, strict=True) if not math.isfinite(d)]
        out[c.name] = {"values": values,
                       "rms_log_error": [d if math.isfinite(d) else None for d in rms],
                       "max_rise": max((d for d in rise if math.isfinite(d)), default=0.0),
                       "unpredictable_at": failed,
                       "consistent_low": min(ok), "consistent_high": max(ok)}
    return out
