"""How sure is a percentile? Confidence intervals for independent and for correlated samples.

A p99 from 100 requests rests on the single largest one or two; a p99 from a day of requests that
queued behind each other rests on a few bursts. Two intervals, for two kinds of sample:

* :func:`bootstrap_percentile_ci` — the percentile bootstrap (Efron, 1979): resample the values
  with replacement and take the spread of the resampled percentiles. Right when the values are
  **independent** (requests from many independent load tests, one per user).
* :func:`batch_means_ci` — batch means / sectioning (Asmussen and Glynn, *Stochastic Simulation*,
  2007, §III.5; Law, *Simulation Modeling and Analysis*, §9.5.3): cut a **time-ordered, correlated**
  series into ``b`` contiguous batches, compute the statistic (a mean or a percentile) in each, and
  use the spread of the batch values: ``estimate ± t_{b−1} · s / √b``. Latencies from one queue are
  correlated (a request that waited long is followed by one that waits long too), so the bootstrap,
  which treats them as independent, gives an interval far too narrow; batches much longer than a
  busy period are nearly independent, so their spread is honest. This is the interval for a
  simulation's mean wait checked against queueing theory (chapter 5) and for the p99 of one
  server's latencies (chapter 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from vidya_lab._validate import check_fraction, check_int, check_real, check_work
from vidya_lab.slo.percentiles import finite_values, safe_percentile, scaled

#: Most resampled values :func:`bootstrap_percentile_ci` draws in all (``n_boot × len(values)``):
#: about a minute on a laptop core; a larger request is refused up front.
MAX_BOOTSTRAP_DRAWS = 2_000_000_000


def bootstrap_percentile_ci(values, q: float, *, confidence: float = 0.95, n_boot: int = 2000,
                            seed: int | np.random.Generator = 0) -> tuple[float, float]:
    """A percentile-bootstrap confidence interval for the ``q``-th percentile (Efron, 1979).

    Resample ``values`` with replacement ``n_boot`` times, take the percentile of each resample,
    and return the ``(1 − confidence)/2`` and ``(1 + confidence)/2`` quantiles of those. Seeded.
    A wide interval means the sample is too small to pin the tail down (a p99 from 100 requests is
    set by its largest one or two). It assumes the values are independent: for latencies of one
    queue in time order use :func:`batch_means_ci`.

    Returns
    -------
    (low, high), in the unit of ``values``.
    """
    qv = check_real("q", q, minimum=0.0, maximum=100.0)
    conf = check_fraction("confidence", confidence, allow_zero=False, allow_one=False)
    nb = check_int("n_boot", n_boot, minimum=10)
    arr = finite_values(values)
    if arr.size == 0:
        raise ValueError("bootstrap of no values is undefined")
    check_work("n_boot x len(values)", float(nb) * arr.size, MAX_BOOTSTRAP_DRAWS,
               unit="resampled values", hint="use fewer resamples or a sample of the values")
    rng = seed if isinstance(seed, np.random.Generator) else \
        np.random.default_rng(check_int("seed", seed, minimum=0))
    small, k = scaled(arr)
    est = np.empty(nb)
    block = max(1, min(nb, 2_000_000 // max(small.size, 1)))  # bounded memory per block
    for start in range(0, nb, block):
        m = min(block, nb - start)
        idx = rng.integers(0, small.size, size=(m, small.size))
        est[start:start + m] = np.percentile(small[idx], qv, axis=1, method="linear")
    lo, hi = np.quantile(est, [(1 - conf) / 2, (1 + conf) / 2])
    return float(np.ldexp(lo, k)), float(np.ldexp(hi, k))


@dataclass(frozen=True)
class BatchMeansCI:
    """The answer of :func:`batch_means_ci` (in the unit of the values).

    Attributes
    ----------
    estimate : the statistic over all values used (the mean, or the ``q``-th percentile).
    low, high : the confidence interval ``estimate ∓ t · standard_error``.
    standard_error : ``s / √b``, with ``s`` the spread of the batch values around the estimate.
    batches : ``b``, the number of batches.
    batch_size : values per batch (the last ``n mod b`` values are left out).
    confidence : the confidence level of ``(low, high)``.
    """

    estimate: float
    low: float
    high: float
    standard_error: float
    batches: int
    batch_size: int
    confidence: float


def batch_means_ci(values, q: float | None = None, *, batches: int = 20,
                   confidence: float = 0.95) -> BatchMeansCI:
    """Confidence interval for the mean or a percentile of a **correlated, time-ordered** series.

    Batch means with sectioning (Asmussen and Glynn, 2007, §III.5): the first ``b·m`` values
    (``m = n // b``) are cut into ``b`` contiguous batches of ``m``; ``θ_j`` is the statistic of
    batch ``j`` (its mean, or its ``q``-th percentile, linear method) and ``θ`` the statistic of all
    ``b·m`` values. Then ``s² = Σ_j (θ_j − θ)² / (b − 1)`` and the interval is
    ``θ ± t_{1−α/2, b−1} · s / √b``. With ``q = None`` this is the classic batch-means interval of
    a simulated mean wait.

    Valid when a batch is much longer than the series' correlation (a few busy periods of the
    queue) and, for a percentile, holds enough values to estimate it (a p99 wants several hundred
    per batch). Fewer, longer batches are safer; ``b`` between 10 and 30 is the usual choice.

    Parameters
    ----------
    values : the series, in time order (e.g. TTFT by arrival); NaNs are dropped.
    q : the percentile (0..100), or ``None`` for the mean.
    batches : ``b`` (≥ 5).
    confidence : e.g. 0.95.
    """
    qv = None if q is None else check_real("q", q, minimum=0.0, maximum=100.0)
    b = check_int("batches", batches, minimum=5)
    conf = check_fraction("confidence", confidence, allow_zero=False, allow_one=False)
    arr = finite_values(values)
    m = arr.size // b
    if m < 2:
        raise ValueError(f"batch means needs at least 2 values per batch: {arr.size} values "
                         f"make {m} per batch for batches = {b}; use fewer batches or more values")
    small, k = scaled(arr[: b * m])
    cut = small.reshape(b, m)
    if qv is None:
        theta_j, theta = cut.mean(axis=1), float(small.mean())
    else:
        theta_j = safe_percentile(cut, qv, axis=1)
        theta = float(safe_percentile(small, qv))
    s = math.sqrt(float(np.sum((theta_j - theta) ** 2)) / (b - 1))
    se = s / math.sqrt(b)
    half = student_t_quantile(0.5 + conf / 2, b - 1) * se
    with np.errstate(over="ignore"):  # only a bound beyond float range can overflow: ±inf
        back = [float(np.ldexp(x, k)) for x in (theta, theta - half, theta + half, se)]
    return BatchMeansCI(estimate=back[0], low=back[1], high=back[2], standard_error=back[3],
                        batches=b, batch_size=m, confidence=conf)


def student_t_quantile(p: float, dof: int) -> float:
    """The ``p``-quantile of Student's t with ``dof`` degrees of freedom (``dof ≥ 4``).

    The Cornish–Fisher expansion about the normal quantile ``x`` (Abramowitz and Stegun 26.7.5),
    ``t ≈ x + g1/ν + g2/ν² + g3/ν³ + g4/ν⁴``; at levels up to 0.995 it is within 0.3 % of the
    tables for ``ν ≥ 4`` (e.g. t_{0.975, 19} = 2.093).
    """
    pv = check_fraction("p", p, allow_zero=False, allow_one=False)
    v = check_int("dof", dof, minimum=4)
    x = NormalDist().inv_cdf(pv)
    g1 = (x ** 3 + x) / 4
    g2 = (5 * x ** 5 + 16 * x ** 3 + 3 * x) / 96
    g3 = (3 * x ** 7 + 19 * x ** 5 + 17 * x ** 3 - 15 * x) / 384
    g4 = (79 * x ** 9 + 776 * x ** 7 + 1482 * x ** 5 - 1920 * x ** 3 - 945 * x) / 92160
    return x + g1 / v + g2 / v ** 2 + g3 / v ** 3 + g4 / v ** 4




def _chi_square_cdf(x: float, dof: int) -> float:
    """P(χ²_ν ≤ x) = P(ν/2, x/2), the regularised lower gamma function: its power series below
    ``a + 1`` and the continued fraction of its complement above (Numerical Recipes, 3rd ed.,
    §6.2), each term bounded, so neither over- nor underflows."""
    a, z = dof / 2.0, x / 2.0
    if z <= 0.0:
        return 0.0
    front = math.exp(a * math.log(z) - z - math.lgamma(a))
    if z < a + 1.0:                                   # series: terms fall as z / (a + n) < 1
        term = total = 1.0 / a
        n = 0
        while abs(term) > abs(total) * 1e-16:
            n += 1
            term *= z / (a + n)
            total += term
        return min(1.0, front * total)
    tiny = 1e-300                                     # Lentz's continued fraction for Q(a, z)
    b, c, d = z + 1.0 - a, 1.0 / tiny, 1.0 / (z + 1.0 - a)
    h, i = d, 0
    while True:
        i += 1
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16 or i > 10_000:
            return max(0.0, 1.0 - front * h)

def chi_square_quantile(p: float, dof: int) -> float:
    """The ``p``-quantile of the chi-square distribution with ``dof`` degrees of freedom.

    Bisection on the distribution function (:func:`_chi_square_cdf`, the regularised gamma
    function's series) to a relative 1e-10, e.g. χ²_{0.10, 9} = 4.168. It says how far a variance
    estimated from ``ν + 1`` batch means may be off: ``s² ν / σ² ~ χ²_ν``.
    """
    pv = check_fraction("p", p, allow_zero=False, allow_one=False)
    v = check_int("dof", dof, minimum=1, maximum=10_000)
    lo, hi = 0.0, float(v)
    while _chi_square_cdf(hi, v) < pv:
        hi *= 2.0
    while hi - lo > 1e-10 * hi:
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _chi_square_cdf(mid, v) < pv else (lo, mid)
    return (lo + hi) / 2.0
