"""Distributions, not means: percentiles of a latency, and how they add up across a fleet.

:func:`percentile` uses numpy's ``linear`` method (Hyndman and Fan's type 7, also R's default): the
p-th percentile of ``n`` sorted values interpolates linearly at rank ``(n − 1)·p/100``. Other tools
use nearest rank (numpy's ``"inverted_cdf"``/``"higher"``); on small samples they disagree.
:func:`percentile_summary` returns the p50/p90/p95/p99/mean object every vidya-lab command prints.

Tails add up across a fleet in one way only: the fleet p99 is the p99 of *all* requests pooled
(:func:`pooled_percentile`), not the mean of per-replica p99s (:func:`mean_of_percentiles`, the
pitfall, kept to show it).

Arithmetic that cannot overflow: interpolating between ``-1e308`` and ``1e308`` as ``a + (b − a)·t``
overflows to ``±inf`` (numpy's p50 of ``[1e308, -1e308]`` is ``-inf``). When the values are that
large they are first scaled by a power of two (exact in binary floating point), and the answer scaled
back: see :func:`scaled`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vidya_lab._validate import check_choice, check_real

#: The percentiles every summary reports (as p-numbers).
PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)

#: numpy percentile methods accepted by :func:`percentile`.
METHODS: tuple[str, ...] = ("linear", "inverted_cdf", "higher", "lower", "nearest",
                            "median_unbiased")

#: Above this magnitude a difference of two values may overflow (float max is about 1.8e308).
_SAFE_MAGNITUDE = 2.0 ** 1000


def finite_values(values, name: str = "values") -> np.ndarray:
    """``values`` as a flat float array with NaNs (undefined, e.g. a one-token TPOT) dropped;
    an infinity or a number beyond float range is a ``ValueError`` naming ``name``."""
    if isinstance(values, str | bytes | dict):
        raise TypeError(f"{name} must be numbers, got {type(values).__name__}")
    try:
        arr = np.asarray(values, dtype=float).ravel()
    except OverflowError:
        raise ValueError(f"{name} must be finite numbers (within float range)") from None
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers") from None
    if np.any(np.isinf(arr)):
        raise ValueError(f"{name} must be finite (NaN = undefined, skipped)")
    return arr[~np.isnan(arr)]


def scaled(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """``(arr · 2**-k, k)``: values small enough that interpolating and averaging them cannot
    overflow; ``k = 0`` unless some value exceeds 2**1000 in magnitude. Exact (a power of two):
    scale an answer back with ``np.ldexp(answer, k)``."""
    if arr.size == 0:
        return arr, 0
    big = float(np.max(np.abs(arr)))
    if big <= _SAFE_MAGNITUDE:
        return arr, 0
    k = math.frexp(big)[1]
    return np.ldexp(arr, -k), k


def safe_percentile(arr: np.ndarray, q, *, method: str = "linear", axis=None):
    """``np.percentile`` that cannot overflow (see :func:`scaled`).

    Without ``axis`` the result is clipped to the values' range: interpolating between equal
    values can round one unit in the last place beyond them.
    """
    small, k = scaled(arr)
    out = np.percentile(small, q, axis=axis, method=method)
    out = np.ldexp(out, k) if k else out
    return out if axis is not None else np.clip(out, np.min(arr), np.max(arr))


def safe_mean(arr: np.ndarray) -> float:
    """The mean of ``arr`` that cannot overflow (``mean([1e308, 1e308])`` is 1e308, not inf)."""
    small, k = scaled(arr)
    mean = float(np.ldexp(small.mean(), k))
    return min(max(mean, float(np.min(arr))), float(np.max(arr)))  # the sum's rounding can step outside


def percentile(values, q: float, *, method: str = "linear") -> float:
    """The ``q``-th percentile (0..100) of ``values``, NaNs skipped.

    ``method`` is numpy's: ``"linear"`` (default; Hyndman and Fan type 7: interpolate at rank
    ``(n − 1)·q/100`` of the sorted values), ``"inverted_cdf"`` (nearest rank, type 1),
    ``"higher"``, ``"lower"``, ``"nearest"``, ``"median_unbiased"`` (type 8).
    Raises ``ValueError`` when no values are left.
    """
    qv = check_real("q", q, minimum=0.0, maximum=100.0)
    check_choice("method", method, METHODS)
    arr = finite_values(values)
    if arr.size == 0:
        raise ValueError("percentile of no values is undefined")
    return float(safe_percentile(arr, qv, method=method))


def percentile_summary(values) -> dict[str, float | None]:
    """``{"p50", "p90", "p95", "p99", "mean"}`` of ``values`` (NaNs skipped; linear method).

    The percentile object of every vidya-lab JSON output. With no defined values every entry is
    ``None`` (JSON ``null``), never an exception: e.g. the TPOT of a trace of one-token answers.
    """
    arr = finite_values(values)
    if arr.size == 0:
        return {"p50": None, "p90": None, "p95": None, "p99": None, "mean": None}
    ps = safe_percentile(arr, PERCENTILES)
    out: dict[str, float | None] = {f"p{p}": float(v) for p, v in zip(PERCENTILES, ps, strict=True)}
    out["mean"] = safe_mean(arr)
    return out


def _groups(groups) -> None:
    if not isinstance(groups, list | tuple | np.ndarray):
        raise TypeError(f"groups must be a sequence of value arrays, got {type(groups).__name__}")


def pooled_percentile(groups: Sequence, q: float) -> float:
    """The percentile of all values of all ``groups`` pooled: the right fleet percentile."""
    _groups(groups)
    arrays = [finite_values(g, "groups") for g in groups]
    if not arrays:
        raise ValueError("groups must hold at least one group")
    return percentile(np.concatenate(arrays), q)


def mean_of_percentiles(groups: Sequence, q: float) -> float:
    """The mean of per-group percentiles: **a pitfall**, shown for contrast, not a fleet metric.

    Averaging per-replica p99s is not the fleet p99: a replica with a bad tail and little traffic
    weighs as much as a busy healthy one, and a tail is not linear in its samples. Use
    :func:`pooled_percentile`.
    """
    _groups(groups)
    if not len(groups):
        raise ValueError("groups must hold at least one group")
    return safe_mean(np.asarray([percentile(g, q) for g in groups]))
