"""Workloads: when requests arrive and how long they are (seeded, vectorised).

A workload is a set of requests, each with an arrival time (seconds from the start), a prompt length
and an output length (tokens), optionally a shared-prefix id (requests that begin with the same
document) and a priority class. Simulators read a :class:`Workload` and emit request timelines that
:mod:`vidya_lab.slo` turns into metrics.

Everything here produces numpy arrays, never one Python object per request: a 24-hour exam day may
have millions of arrivals and is generated in seconds. :class:`Request` exists for reading one
request at a time and for small hand-made examples.

Arrival processes (each returns a sorted ``float64`` array of arrival times in ``[0, duration_s)``):

* :func:`poisson_arrivals` — independent arrivals at a constant rate (memoryless gaps);
* :func:`mmpp_arrivals` — a Markov-modulated Poisson process: the rate jumps between states with
  exponential dwell times (bursty traffic; :func:`on_off_arrivals` is the two-state case with a
  silent "off" state);
* :func:`nonhomogeneous_arrivals` — a rate that changes with time, by thinning
  (Lewis and Shedler, 1979); :class:`DiurnalProfile` and :func:`student_day_profile` give the
  day curve of a student tutor (quiet night, a 7 am rush, an evening homework peak, ×10 in exam
  season).

Length distributions (each has ``sample(n, rng) -> int64 array``): :class:`FixedLength`,
:class:`LognormalLength` (from a mean and a median, as papers report them) and
:class:`EmpiricalLength` (resample observed lengths).

Randomness only through ``seed`` (an ``int`` or a ``numpy.random.Generator``): same seed, same
workload.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from vidya_lab._validate import check_fraction, check_int, check_labels, check_real

__all__ = [
    "Request",
    "Workload",
    "FixedLength",
    "LognormalLength",
    "EmpiricalLength",
    "DiurnalProfile",
    "as_rng",
    "poisson_arrivals",
    "mmpp_arrivals",
    "on_off_arrivals",
    "nonhomogeneous_arrivals",
    "student_day_profile",
    "make_workload",
]

#: Largest number of arrivals one call will generate (guards against a typo such as a rate in
#: requests per hour given as per second over a year). About 1.6 GB of float64 candidates.
MAX_ARRIVALS = 200_000_000


def as_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A ``numpy.random.Generator`` from an int seed or a Generator (passed through).

    ``None`` is refused: every random result in vidya-lab must be reproducible.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        raise TypeError("seed must be an int or a numpy.random.Generator (results must be "
                        "reproducible), got None")
    return np.random.default_rng(check_int("seed", seed, minimum=0))


def _check_count(expected: float, what: str) -> None:
    if expected > MAX_ARRIVALS:
        raise ValueError(f"{what} would generate about {expected:.3g} arrivals, more than the "
                         f"limit of {MAX_ARRIVALS:.0e}; check the rate's unit (requests per second)")


# ----------------------------------------------------------------------------- arrival processes

def poisson_arrivals(rate_per_s: float, duration_s: float, *,
                     seed: int | np.random.Generator) -> np.ndarray:
    """Arrival times of a homogeneous Poisson process.

    The count in ``[0, duration_s)`` is Poisson(``rate_per_s × duration_s``) and, given the count,
    the times are independent and uniform (the conditional-uniformity property), which is how they
    are drawn here: no loop over requests. Gaps between arrivals are exponential with mean
    ``1 / rate_per_s``.

    Parameters
    ----------
    rate_per_s : mean arrival rate, requests per second (≥ 0).
    duration_s : length of the window, seconds (> 0).
    seed : int or Generator.

    Returns
    -------
    numpy.ndarray of float64, sorted, seconds from the start of the window.
    """
    rate = check_real("rate_per_s", rate_per_s, minimum=0.0)
    duration = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    _check_count(rate * duration, "poisson_arrivals")
    rng = as_rng(seed)
    n = int(rng.poisson(rate * duration))
    return np.sort(rng.uniform(0.0, duration, size=n))


def mmpp_arrivals(rates_per_s: Sequence[float], mean_dwell_s: Sequence[float], duration_s: float,
                  *, seed: int | np.random.Generator, start_state: int = 0) -> np.ndarray:
    """Arrival times of a Markov-modulated Poisson process (bursty traffic).

    The process sits in state ``i`` for an exponential time with mean ``mean_dwell_s[i]``, during which
    requests arrive as a Poisson process of rate ``rates_per_s[i]``; then it jumps to another state
    chosen uniformly (with two states it alternates). The long-run mean rate is
    ``Σ rate_i · dwell_i / Σ dwell_i`` (each state visited equally often), but arrivals bunch: the
    count in a window varies more than a Poisson count of the same mean (index of dispersion > 1).

    Parameters
    ----------
    rates_per_s : arrival rate in each state, requests per second (each ≥ 0; at least 2 states).
    mean_dwell_s : mean time spent in each state per visit, seconds (each > 0).
    duration_s : window length, seconds (> 0).
    seed : int or Generator.
    start_state : the state at time 0.

    Returns
    -------
    numpy.ndarray of float64, sorted, seconds.
    """
    rates = np.asarray([check_real(f"rates_per_s[{i}]", r, minimum=0.0)
                        for i, r in enumerate(rates_per_s)], dtype=float)
    dwells = np.asarray([check_real(f"mean_dwell_s[{i}]", d, minimum=0.0, min_inclusive=False)
                         for i, d in enumerate(mean_dwell_s)], dtype=float)
    if len(rates) < 2:
        raise ValueError(f"rates_per_s needs at least 2 states, got {len(rates)}")
    if len(dwells) != len(rates):
        raise ValueError(f"mean_dwell_s must have one entry per state ({len(rates)}), "
                         f"got {len(dwells)}")
    duration = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    state = check_int("start_state", start_state, minimum=0, maximum=len(rates) - 1)
    _check_count(float(rates.max()) * duration, "mmpp_arrivals")
    rng = as_rng(seed)
    k = len(rates)
    # The state path: few segments (duration / dwell), so a short loop over segments is fine;
    # the arrivals inside each segment are drawn as arrays.
    starts, ends, seg_states = [], [], []
    t = 0.0
    while t < duration:
        dwell = rng.exponential(dwells[state])
        starts.append(t)
        ends.append(min(t + dwell, duration))
        seg_states.append(state)
        t += dwell
        step = int(rng.integers(1, k)) if k > 2 else 1
        state = (state + step) % k
    starts_a, ends_a = np.asarray(starts), np.asarray(ends)
    seg_rates = rates[np.asarray(seg_states)]
    counts = rng.poisson(seg_rates * (ends_a - starts_a))
    seg_of = np.repeat(np.arange(len(counts)), counts)
    times = starts_a[seg_of] + rng.uniform(0.0, 1.0, size=seg_of.size) * (ends_a - starts_a)[seg_of]
    return np.sort(times)


def on_off_arrivals(rate_on_per_s: float, mean_on_s: float, mean_off_s: float, duration_s: float,
                    *, seed: int | np.random.Generator) -> np.ndarray:
    """Bursts: Poisson at ``rate_on_per_s`` during "on" periods, silence during "off" periods.

    A two-state :func:`mmpp_arrivals` with rates ``(rate_on_per_s, 0)`` and exponential period lengths
    of means ``mean_on_s`` and ``mean_off_s``. Mean rate ``rate_on · on / (on + off)``.
    """
    return mmpp_arrivals((rate_on_per_s, 0.0), (mean_on_s, mean_off_s), duration_s, seed=seed)


def nonhomogeneous_arrivals(rate_fn: Callable[[np.ndarray], np.ndarray], duration_s: float, *,
                            rate_max_per_s: float | Callable[[float, float], float],
                            seed: int | np.random.Generator,
                            chunk_s: float = 3600.0) -> np.ndarray:
    """Arrival times of a Poisson process whose rate changes with time, by thinning.

    Thinning (Lewis and Shedler): draw candidates from a Poisson process at a constant bound
    ``λ_max ≥ λ(t)`` and keep each candidate at time ``t`` with probability ``λ(t) / λ_max``. The kept
    times are exactly a Poisson process of rate ``λ(t)``. The window is cut into chunks of
    ``chunk_s`` seconds so memory stays bounded on a long day, and ``rate_max_per_s`` may be a
    function ``(t0, t1) -> bound`` giving a tight bound per chunk (fewer wasted candidates).

    Parameters
    ----------
    rate_fn : vectorised ``λ(t)``: takes a float64 array of times (s) and returns rates (requests/s).
    duration_s : window length, seconds (> 0).
    rate_max_per_s : an upper bound on ``λ`` over the window (requests/s), or a function of a chunk
        ``(t0, t1)`` returning an upper bound on it. A rate above the bound raises ``ValueError``
        (thinning would silently under-sample it).
    seed : int or Generator.
    chunk_s : chunk length, seconds (> 0).

    Returns
    -------
    numpy.ndarray of float64, sorted, seconds.
    """
    duration = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    chunk = check_real("chunk_s", chunk_s, minimum=0.0, min_inclusive=False)
    if not callable(rate_fn):
        raise TypeError(f"rate_fn must be a function of time (s) -> rate (requests/s), "
                        f"got {type(rate_fn).__name__}")
    if callable(rate_max_per_s):
        bound_fn = rate_max_per_s
    else:
        bound = check_real("rate_max_per_s", rate_max_per_s, minimum=0.0)

        def bound_fn(t0: float, t1: float, _b: float = bound) -> float:
            return _b
    rng = as_rng(seed)
    edges = np.append(np.arange(0.0, duration, chunk), duration)
    bounds = [check_real("rate_max_per_s", bound_fn(float(a), float(b)), minimum=0.0)
              for a, b in zip(edges[:-1], edges[1:], strict=True)]
    _check_count(sum(bd * (b - a) for bd, a, b in zip(bounds, edges[:-1], edges[1:], strict=True)),
                 "nonhomogeneous_arrivals")
    pieces = []
    for a, b, bd in zip(edges[:-1], edges[1:], bounds, strict=True):
        n = int(rng.poisson(bd * (b - a)))
        if n == 0:
            continue
        cand = rng.uniform(a, b, size=n)
        lam = np.asarray(rate_fn(cand), dtype=float)
        if lam.shape != cand.shape:
            raise ValueError(f"rate_fn must return one rate per time (shape {cand.shape}), "
                             f"got shape {lam.shape}")
        if not np.all(np.isfinite(lam)) or np.any(lam < 0):
            raise ValueError("rate_fn returned a negative or non-finite rate")
        if np.any(lam > bd * (1 + 1e-9)):
            worst = float(lam.max())
            raise ValueError(f"rate_fn reached {worst:.6g} requests/s in [{a:.6g}, {b:.6g}) s, above "
                             f"rate_max_per_s = {bd:.6g}; thinning needs a true upper bound")
        keep = rng.uniform(0.0, 1.0, size=n) * bd < lam
        pieces.append(cand[keep])
    if not pieces:
        return np.empty(0, dtype=float)
    return np.sort(np.concatenate(pieces))


# ----------------------------------------------------------------------------- the day curve

@dataclass(frozen=True)
class DiurnalProfile:
    """A daily arrival-rate curve, piecewise linear in the hour of the day.

    ``rate(t) = peak_rate_per_s × multiplier × interp(hour_of_day(t), hours, relative)``, where
    ``hour_of_day(t) = (start_hour + t / 3600) mod 24`` and the curve wraps around midnight.

    Parameters
    ----------
    hours : knot positions, hours of the day, strictly increasing within [0, 24).
    relative : the rate at each knot as a fraction of the peak (each in [0, 1], max = 1).
    peak_rate_per_s : the rate at the busiest moment of an ordinary day, requests per second.
    multiplier : scales the whole day (e.g. 10 in exam season).
    start_hour : hour of the day at ``t = 0``.
    """

    hours: tuple[float, ...]
    relative: tuple[float, ...]
    peak_rate_per_s: float
    multiplier: float = 1.0
    start_hour: float = 0.0

    def __post_init__(self) -> None:
        hours = tuple(check_real(f"hours[{i}]", h, minimum=0.0, maximum=24.0, max_inclusive=False)
                      for i, h in enumerate(self.hours))
        rel = tuple(check_fraction(f"relative[{i}]", r) for i, r in enumerate(self.relative))
        if len(hours) < 2 or len(hours) != len(rel):
            raise ValueError(f"hours and relative need the same length (≥ 2), got {len(hours)} "
                             f"and {len(rel)}")
        if any(b <= a for a, b in zip(hours, hours[1:], strict=False)):
            raise ValueError(f"hours must be strictly increasing, got {hours}")
        if not math.isclose(max(rel), 1.0):
            raise ValueError(f"relative must reach 1.0 at the peak, got max {max(rel)}")
        object.__setattr__(self, "hours", hours)
        object.__setattr__(self, "relative", rel)
        check_real("peak_rate_per_s", self.peak_rate_per_s, minimum=0.0)
        check_real("multiplier", self.multiplier, minimum=0.0)
        check_real("start_hour", self.start_hour, minimum=0.0, maximum=24.0, max_inclusive=False)

    def _relative_at_hour(self, hour: np.ndarray) -> np.ndarray:
        # wrap: extend the knots one period either side so interpolation crosses midnight
        xs = np.concatenate([np.asarray(self.hours) - 24.0, self.hours, np.asarray(self.hours) + 24.0])
        ys = np.tile(self.relative, 3)
        return np.interp(hour, xs, ys)

    def rate_per_s(self, t_s) -> np.ndarray:
        """Arrival rate (requests/s) at times ``t_s`` (seconds from ``t = 0``); vectorised."""
        t = np.asarray(t_s, dtype=float)
        hour = np.mod(self.start_hour + t / 3600.0, 24.0)
        return self.peak_rate_per_s * self.multiplier * self._relative_at_hour(hour)

    def max_rate_between(self, t0_s: float, t1_s: float) -> float:
        """The largest rate on ``[t0_s, t1_s]`` (exact: a piecewise-linear curve peaks at a knot or
        an end)."""
        pts = [t0_s, t1_s]
        for k in range(int(math.floor((self.start_hour * 3600 + t0_s) / 86400.0)) - 1,
                       int(math.ceil((self.start_hour * 3600 + t1_s) / 86400.0)) + 1):
            for h in self.hours:
                t = (k * 24.0 + h - self.start_hour) * 3600.0
                if t0_s <= t <= t1_s:
                    pts.append(t)
        return float(np.max(self.rate_per_s(np.asarray(pts))))

    def mean_rate_per_s(self) -> float:
        """The day's mean rate, requests per second (exact integral of the piecewise-linear curve)."""
        xs = np.append(self.hours, self.hours[0] + 24.0)
        ys = np.append(self.relative, self.relative[0])
        area = float(np.sum((ys[1:] + ys[:-1]) / 2.0 * np.diff(xs)))  # relative·hours
        return self.peak_rate_per_s * self.multiplier * area / 24.0

    def expected_count(self, duration_s: float = 86400.0) -> float:
        """Expected number of arrivals in ``[0, duration_s)`` (numerical integral on a 1 s grid)."""
        duration = check_real("duration_s", duration_s, minimum=0.0)
        n = max(2, int(duration) + 1)
        t = np.linspace(0.0, duration, n)
        return float(np.trapezoid(self.rate_per_s(t), t))

    def arrivals(self, duration_s: float = 86400.0, *,
                 seed: int | np.random.Generator) -> np.ndarray:
        """Arrival times (s) over ``[0, duration_s)`` by thinning with exact per-hour bounds."""
        return nonhomogeneous_arrivals(self.rate_per_s, duration_s,
                                       rate_max_per_s=self.max_rate_between, seed=seed)


#: The shape of a school day for a student tutor (hour of day, fraction of the evening peak).
#: An illustrative assumption, not a measurement: quiet from midnight to 5 am, a rush before school
#: around 7 am, a low plateau while students are in class, the homework peak around 8–9 pm.
STUDENT_DAY_SHAPE: tuple[tuple[float, float], ...] = (
    (0.0, 0.15), (3.0, 0.03), (5.0, 0.03), (7.0, 0.55), (8.5, 0.20), (13.0, 0.20),
    (16.0, 0.45), (18.0, 0.60), (20.5, 1.00), (22.5, 0.50),
)


def student_day_profile(peak_rate_per_s: float, *, exam_season: bool = False,
                        exam_multiplier: float = 10.0, start_hour: float = 0.0) -> DiurnalProfile:
    """The student tutor's day (:data:`STUDENT_DAY_SHAPE`) at a given evening-peak rate.

    Parameters
    ----------
    peak_rate_per_s : the evening homework peak of an ordinary day, requests per second.
    exam_season : multiply the whole day by ``exam_multiplier``.
    exam_multiplier : how much busier exam season is (default 10×, the story's assumption).
    start_hour : hour of the day at ``t = 0``.
    """
    mult = check_real("exam_multiplier", exam_multiplier, minimum=0.0) if exam_season else 1.0
    hours, rel = zip(*STUDENT_DAY_SHAPE, strict=True)
    return DiurnalProfile(hours=hours, relative=rel, peak_rate_per_s=peak_rate_per_s,
                          multiplier=mult, start_hour=start_hour)


# ----------------------------------------------------------------------------- lengths

class _LengthDist(ABC):
    """A distribution of request lengths, tokens: :class:`FixedLength`, :class:`LognormalLength`,
    :class:`EmpiricalLength`."""

    @abstractmethod
    def sample(self, n: int, rng: int | np.random.Generator) -> np.ndarray:
        """``n`` lengths drawn with ``rng``, tokens (int64)."""


@dataclass(frozen=True)
class FixedLength(_LengthDist):
    """Every request has ``tokens`` tokens."""

    tokens: int

    def __post_init__(self) -> None:
        check_int("tokens", self.tokens, minimum=0)

    def sample(self, n: int, rng: int | np.random.Generator) -> np.ndarray:
        """``n`` lengths, tokens (int64)."""
        n = check_int("n", n, minimum=0)
        return np.full(n, self.tokens, dtype=np.int64)

    @property
    def mean_tokens(self) -> float:
        return float(self.tokens)


@dataclass(frozen=True)
class LognormalLength(_LengthDist):
    """Lengths from a lognormal given its mean and median, rounded to whole tokens and clipped.

    Papers report a mean and a median (p50); a lognormal with median ``m`` and mean ``μ`` has
    ``ln X ~ Normal(ln m, σ²)`` with ``σ = sqrt(2 ln(μ / m))`` (so it needs ``μ ≥ m``: right-skewed,
    as prompt and answer lengths are). Rounding and clipping to ``[min_tokens, max_tokens]`` move the
    mean slightly; :meth:`sample` is what simulations use.

    Parameters
    ----------
    mean_tokens : mean length, tokens (> 0).
    p50_tokens : median length, tokens (> 0, ≤ mean_tokens).
    min_tokens, max_tokens : clip range, tokens (``max_tokens=None``: no upper clip).
    """

    mean_tokens: float
    p50_tokens: float
    min_tokens: int = 1
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        mean = check_real("mean_tokens", self.mean_tokens, minimum=0.0, min_inclusive=False)
        p50 = check_real("p50_tokens", self.p50_tokens, minimum=0.0, min_inclusive=False)
        if p50 > mean:
            raise ValueError(f"p50_tokens ({p50}) must be <= mean_tokens ({mean}): a lognormal's "
                             f"mean is at least its median")
        lo = check_int("min_tokens", self.min_tokens, minimum=0)
        if self.max_tokens is not None:
            check_int("max_tokens", self.max_tokens, minimum=max(lo, 1))

    @property
    def sigma(self) -> float:
        """Standard deviation of ``ln X``."""
        return math.sqrt(2.0 * math.log(self.mean_tokens / self.p50_tokens))

    @property
    def mu(self) -> float:
        """Mean of ``ln X`` (= ln of the median)."""
        return math.log(self.p50_tokens)

    def sample(self, n: int, rng: int | np.random.Generator) -> np.ndarray:
        """``n`` lengths, tokens (int64)."""
        n = check_int("n", n, minimum=0)
        x = as_rng(rng).lognormal(self.mu, self.sigma, size=n)
        hi = np.inf if self.max_tokens is None else self.max_tokens
        return np.clip(np.rint(x), self.min_tokens, hi).astype(np.int64)


@dataclass(frozen=True)
class EmpiricalLength(_LengthDist):
    """Lengths resampled (with replacement) from observed values, optionally weighted."""

    values: tuple[int, ...]
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        vals = tuple(check_int(f"values[{i}]", v, minimum=0) for i, v in enumerate(self.values))
        if not vals:
            raise ValueError("values must hold at least one observed length")
        object.__setattr__(self, "values", vals)
        if self.weights is not None:
            w = tuple(check_real(f"weights[{i}]", x, minimum=0.0) for i, x in enumerate(self.weights))
            if len(w) != len(vals):
                raise ValueError(f"weights must have one entry per value ({len(vals)}), got {len(w)}")
            if sum(w) <= 0:
                raise ValueError("weights must not all be zero")
            object.__setattr__(self, "weights", w)

    @property
    def mean_tokens(self) -> float:
        v = np.asarray(self.values, dtype=float)
        if self.weights is None:
            return float(v.mean())
        w = np.asarray(self.weights, dtype=float)
        return float(np.sum(v * w) / np.sum(w))

    def sample(self, n: int, rng: int | np.random.Generator) -> np.ndarray:
        """``n`` lengths, tokens (int64)."""
        n = check_int("n", n, minimum=0)
        p = None
        if self.weights is not None:
            w = np.asarray(self.weights, dtype=float)
            p = w / w.sum()
        return as_rng(rng).choice(np.asarray(self.values, dtype=np.int64), size=n, p=p)


# ----------------------------------------------------------------------------- the workload

@dataclass(frozen=True)
class Request:
    """One request, for reading a workload one row at a time or writing a small example.

    Parameters
    ----------
    request_id : index of the request in its workload.
    arrival_s : arrival time, seconds from the start.
    prompt_tokens : prompt length, tokens (including any shared prefix).
    output_tokens : tokens the model will generate (≥ 1 for a request that gets an answer).
    prefix_id : id of the shared prefix (e.g. an uploaded document) the prompt begins with; ``-1``
        for none.
    prefix_tokens : how many leading prompt tokens are that shared prefix (≤ prompt_tokens).
    klass : priority class label (e.g. ``"interactive"``, ``"batch"``); ``""`` for none.
    """

    request_id: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    prefix_id: int = -1
    prefix_tokens: int = 0
    klass: str = ""

    def __post_init__(self) -> None:
        check_int("request_id", self.request_id, minimum=0)
        check_real("arrival_s", self.arrival_s, minimum=0.0)
        check_int("prompt_tokens", self.prompt_tokens, minimum=0)
        check_int("output_tokens", self.output_tokens, minimum=0)
        check_int("prefix_id", self.prefix_id, minimum=-1)
        check_int("prefix_tokens", self.prefix_tokens, minimum=0, maximum=self.prompt_tokens)
        if self.prefix_id == -1 and self.prefix_tokens:
            raise ValueError("prefix_tokens must be 0 when prefix_id is -1 (no shared prefix)")
        if not isinstance(self.klass, str):
            raise TypeError(f"klass must be a string, got {type(self.klass).__name__}")


def _int_array(name: str, values, n: int | None, minimum: int = 0) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.size and not (np.issubdtype(arr.dtype, np.integer)
                         or (np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)))):
        raise TypeError(f"{name} must hold whole numbers of tokens, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if n is not None and arr.size != n:
        raise ValueError(f"{name} must have one entry per request ({n}), got {arr.size}")
    if arr.size and arr.min() < minimum:
        i = int(np.argmin(arr))
        raise ValueError(f"{name} must be >= {minimum}; request {i} has {int(arr[i])}")
    return arr


@dataclass(frozen=True, eq=False)
class Workload:
    """A workload in columnar form: one numpy array per field, one entry per request.

    Build it with :func:`make_workload` (sampled) or :meth:`from_arrays` (given); requests are kept
    sorted by arrival. ``len(w)`` is the number of requests, ``w[i]`` is a :class:`Request`, ``w[mask]``
    or ``w[a:b]`` a smaller :class:`Workload`; iterate with :meth:`requests`.

    Attributes
    ----------
    arrival_s : float64, seconds, non-decreasing.
    prompt_tokens, output_tokens, prefix_tokens : int64, tokens.
    prefix_id : int64, ``-1`` for no shared prefix.
    klass : str array of class labels (``""`` for none).
    """

    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_id: np.ndarray
    prefix_tokens: np.ndarray
    klass: np.ndarray

    @classmethod
    def from_arrays(cls, arrival_s, prompt_tokens, output_tokens, *, prefix_id=None,
                    prefix_tokens=None, klass=None) -> Workload:
        """Validate and sort columns into a workload (times in s, lengths in tokens)."""
        arr = np.asarray(arrival_s, dtype=float)
        if arr.ndim != 1:
            raise ValueError(f"arrival_s must be a 1-D array, got shape {arr.shape}")
        if arr.size and (not np.all(np.isfinite(arr)) or arr.min() < 0):
            raise ValueError("arrival_s must be finite and >= 0 seconds")
        n = arr.size
        prompt = _int_array("prompt_tokens", prompt_tokens, n)
        out = _int_array("output_tokens", output_tokens, n)
        pid = (np.full(n, -1, dtype=np.int64) if prefix_id is None
               else _int_array("prefix_id", prefix_id, n, minimum=-1))
        ptok = (np.zeros(n, dtype=np.int64) if prefix_tokens is None
                else _int_array("prefix_tokens", prefix_tokens, n))
        if np.any(ptok > prompt):
            i = int(np.argmax(ptok > prompt))
            raise ValueError(f"prefix_tokens must be <= prompt_tokens; request {i} has "
                             f"{int(ptok[i])} > {int(prompt[i])}")
        if np.any((pid == -1) & (ptok > 0)):
            raise ValueError("prefix_tokens must be 0 where prefix_id is -1 (no shared prefix)")
        kl = check_labels("klass", klass, n)
        order = np.argsort(arr, kind="stable")
        return cls(arr[order], prompt[order], out[order], pid[order], ptok[order], kl[order])

    @classmethod
    def from_requests(cls, requests: Sequence[Request]) -> Workload:
        """A workload from :class:`Request` objects (for small, hand-made examples)."""
        reqs = list(requests)
        for r in reqs:
            if not isinstance(r, Request):
                raise TypeError(f"requests must be Request objects, got {type(r).__name__}")
        return cls.from_arrays([r.arrival_s for r in reqs], [r.prompt_tokens for r in reqs],
                               [r.output_tokens for r in reqs],
                               prefix_id=[r.prefix_id for r in reqs],
                               prefix_tokens=[r.prefix_tokens for r in reqs],
                               klass=[r.klass for r in reqs] if reqs else None)

    @staticmethod
    def merge(*workloads: Workload) -> Workload:
        """One workload from several, sorted by arrival (e.g. student traffic plus one teacher's
        40,000-token upload made with :meth:`from_requests`)."""
        if not workloads or not all(isinstance(w, Workload) for w in workloads):
            raise TypeError("merge needs one or more Workload objects")
        return Workload.from_arrays(
            np.concatenate([w.arrival_s for w in workloads]),
            np.concatenate([w.prompt_tokens for w in workloads]),
            np.concatenate([w.output_tokens for w in workloads]),
            prefix_id=np.concatenate([w.prefix_id for w in workloads]),
            prefix_tokens=np.concatenate([w.prefix_tokens for w in workloads]),
            klass=np.concatenate([w.klass.astype(str) for w in workloads]))

    def __len__(self) -> int:
        return int(self.arrival_s.size)

    def __getitem__(self, key):
        if isinstance(key, Integral):
            i = int(key)
            if not -len(self) <= i < len(self):
                raise IndexError(f"request index {i} out of range for {len(self)} requests")
            i %= len(self)
            return Request(i, float(self.arrival_s[i]), int(self.prompt_tokens[i]),
                           int(self.output_tokens[i]), int(self.prefix_id[i]),
                           int(self.prefix_tokens[i]), str(self.klass[i]))
        return Workload(self.arrival_s[key], self.prompt_tokens[key], self.output_tokens[key],
                        self.prefix_id[key], self.prefix_tokens[key], self.klass[key])

    def requests(self) -> Iterator[Request]:
        """Iterate over the requests as :class:`Request` objects (slow for millions: prefer arrays)."""
        for i in range(len(self)):
            yield self[i]

    @property
    def duration_s(self) -> float:
        """Time of the last arrival, seconds (0 for an empty workload)."""
        return float(self.arrival_s[-1]) if len(self) else 0.0

    def total_tokens(self) -> dict[str, int]:
        """Total prompt and output tokens (tokens)."""
        return {"prompt_tokens": int(self.prompt_tokens.sum()),
                "output_tokens": int(self.output_tokens.sum())}


def make_workload(arrival_s, *, prompt_tokens: _LengthDist, output_tokens: _LengthDist,
                  seed: int | np.random.Generator,
                  classes: Mapping[str, float] | None = None,
                  shared_prefix_tokens: int = 0, shared_prefix_fraction: float = 0.0,
                  shared_prefix_id: int = 0) -> Workload:
    """Attach sampled lengths (and optionally classes and a shared prefix) to arrival times.

    Parameters
    ----------
    arrival_s : arrival times, seconds (e.g. from :func:`poisson_arrivals`).
    prompt_tokens : distribution of each request's own prompt tokens.
    output_tokens : distribution of output tokens.
    seed : int or Generator.
    classes : ``{label: probability}``; each request gets a label drawn with these probabilities
        (they must sum to 1). ``None``: no classes (label ``""``).
    shared_prefix_tokens : length of a shared document, tokens (e.g. one uploaded textbook chapter).
    shared_prefix_fraction : fraction of requests whose prompt begins with that document; for them
        ``prompt_tokens = shared_prefix_tokens + own prompt`` and ``prefix_id = shared_prefix_id``.
    shared_prefix_id : the id given to that document.

    Returns
    -------
    Workload, sorted by arrival.
    """
    if not isinstance(prompt_tokens, _LengthDist) or not isinstance(output_tokens, _LengthDist):
        raise TypeError("prompt_tokens and output_tokens must be length distributions "
                        "(FixedLength, LognormalLength or EmpiricalLength)")
    arr = np.sort(np.asarray(arrival_s, dtype=float))
    n = arr.size
    rng = as_rng(seed)
    prefix_len = check_int("shared_prefix_tokens", shared_prefix_tokens, minimum=0)
    frac = check_fraction("shared_prefix_fraction", shared_prefix_fraction)
    pid_value = check_int("shared_prefix_id", shared_prefix_id, minimum=0)
    if frac > 0 and prefix_len == 0:
        raise ValueError("shared_prefix_fraction > 0 needs shared_prefix_tokens > 0")
    prompt = prompt_tokens.sample(n, rng)
    out = output_tokens.sample(n, rng)
    has_prefix = rng.uniform(size=n) < frac if frac > 0 else np.zeros(n, dtype=bool)
    pid = np.where(has_prefix, pid_value, -1).astype(np.int64)
    ptok = np.where(has_prefix, prefix_len, 0).astype(np.int64)
    prompt = prompt + ptok
    if classes is None:
        kl = None
    else:
        labels = list(classes)
        if not labels:
            raise ValueError("classes must name at least one class")
        probs = np.asarray([check_real(f"classes[{k!r}]", classes[k], minimum=0.0) for k in labels])
        if not math.isclose(float(probs.sum()), 1.0, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(f"class probabilities must sum to 1, got {float(probs.sum())}")
        kl = np.asarray(labels, dtype=str)[rng.choice(len(labels), size=n, p=probs / probs.sum())]
    return Workload.from_arrays(arr, prompt, out, prefix_id=pid, prefix_tokens=ptok, klass=kl)


# ----------------------------------------------------------------------------- the tutor's requests

def tutor_requests(arrival_s, *, seed: int | np.random.Generator, scenario=None) -> Workload:
    """Tanvi's requests at the given arrival times: the story's prompt and answer lengths.

    Every prompt starts with the syllabus and a subject prompt (shared prefix id 0), followed by the
    student's question (lognormal: the scenario's mean and median); answers are lognormal (mean and
    median from the scenario, at most ``answer_tokens_max``). ``scenario`` defaults to the book's
    (:data:`vidya_lab.scenario.TANVI`). The one place the tutor's lengths become a workload: the toy
    server of chapter 1 and the fleet of chapter 6 both call it.
    """
    if scenario is None:
        from vidya_lab.scenario import TANVI as scenario
    return make_workload(
        arrival_s,
        prompt_tokens=LognormalLength(scenario.question_tokens_mean, scenario.question_tokens_p50),
        output_tokens=LognormalLength(scenario.answer_tokens_mean, scenario.answer_tokens_p50,
                                      max_tokens=scenario.answer_tokens_max),
        seed=seed,
        shared_prefix_tokens=scenario.syllabus_prompt_tokens + scenario.subject_prompt_tokens,
        shared_prefix_fraction=1.0, shared_prefix_id=0)
