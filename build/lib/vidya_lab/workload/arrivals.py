"""When requests arrive: Poisson, bursty (Markov-modulated) and time-varying (thinning) processes.

Each function returns a sorted ``float64`` array of arrival times in ``[0, duration_s)``, drawn as
arrays (no Python object per request), and refuses up front a call that would generate more than
:data:`vidya_lab.workload.seeding.MAX_ARRIVALS` arrivals.

* :func:`poisson_arrivals` — independent arrivals at a constant rate (memoryless gaps);
* :func:`mmpp_arrivals` — a Markov-modulated Poisson process: the rate jumps between states with
  exponential dwell times (bursty traffic; :func:`on_off_arrivals` is the two-state case with a
  silent "off" state);
* :func:`nonhomogeneous_arrivals` — a rate that changes with time, by thinning (Lewis and Shedler,
  1979); :mod:`vidya_lab.workload.day` gives it the student day.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from vidya_lab._validate import check_int, check_real, check_reals, check_work
from vidya_lab.workload.seeding import as_rng, check_arrival_count

#: Most state changes :func:`mmpp_arrivals` draws (each is one step of a short Python loop):
#: about a second of work. Two years of traffic with one-minute bursts is a million.
MAX_STATE_CHANGES = 1_000_000
#: Most chunks :func:`nonhomogeneous_arrivals` cuts a window into (each asks the bound once):
#: 100,000 one-hour chunks are eleven years.
MAX_CHUNKS = 100_000


def sorted_copy(times: np.ndarray) -> np.ndarray:
    """``np.sort(times)``, without sorting what is already in order (a day's arrivals, made
    window by window, usually are: a check is a hundredth of a sort)."""
    t = np.asarray(times)
    if t.ndim == 1 and t.size > 1 and bool(np.all(t[1:] >= t[:-1])):
        return t.copy()
    return np.sort(t)


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
    check_arrival_count(rate * duration, "rate_per_s x duration_s")
    rng = as_rng(seed)
    n = int(rng.poisson(rate * duration))
    return np.sort(rng.uniform(0.0, duration, size=n))


def _state_path(dwells: np.ndarray, duration: float, state: int, rng: np.random.Generator):
    """Segments (start, end, state) of the modulating chain over ``[0, duration)``."""
    k = len(dwells)
    starts, ends, seg_states = [], [], []
    t = 0.0
    while t < duration:  # few segments (duration / dwell), bounded by the caller
        dwell = rng.exponential(dwells[state])
        starts.append(t)
        ends.append(min(t + dwell, duration))
        seg_states.append(state)
        t += dwell
        step = int(rng.integers(1, k)) if k > 2 else 1
        state = (state + step) % k
    return np.asarray(starts), np.asarray(ends), np.asarray(seg_states)


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
    duration_s : window length, seconds (> 0); at most :data:`MAX_STATE_CHANGES` expected state
        changes (``duration_s / mean dwell``) and ``MAX_ARRIVALS`` arrivals.
    seed : int or Generator.
    start_state : the state at time 0.

    Returns
    -------
    numpy.ndarray of float64, sorted, seconds.
    """
    rates = check_reals("rates_per_s", rates_per_s, minimum=0.0, max_length=1000)
    dwells = check_reals("mean_dwell_s", mean_dwell_s, minimum=0.0, min_inclusive=False,
                         max_length=1000)
    if len(rates) < 2:
        raise ValueError(f"rates_per_s needs at least 2 states, got {len(rates)}")
    if len(dwells) != len(rates):
        raise ValueError(f"mean_dwell_s must have one entry per state ({len(rates)}), "
                         f"got {len(dwells)}")
    duration = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    state = check_int("start_state", start_state, minimum=0, maximum=len(rates) - 1)
    check_arrival_count(float(rates.max()) * duration, "max(rates_per_s) x duration_s")
    check_work("duration_s / mean(mean_dwell_s)", duration / float(dwells.mean()),
               MAX_STATE_CHANGES, unit="state changes",
               hint="lengthen mean_dwell_s or shorten duration_s")
    rng = as_rng(seed)
    starts, ends, seg_states = _state_path(dwells, duration, state, rng)
    counts = rng.poisson(rates[seg_states] * (ends - starts))
    seg_of = np.repeat(np.arange(len(counts)), counts)
    times = starts[seg_of] + rng.uniform(0.0, 1.0, size=seg_of.size) * (ends - starts)[seg_of]
    return np.sort(times)


def on_off_arrivals(rate_on_per_s: float, mean_on_s: float, mean_off_s: float, duration_s: float,
                    *, seed: int | np.random.Generator) -> np.ndarray:
    """Bursts: Poisson at ``rate_on_per_s`` during "on" periods, silence during "off" periods.

    A two-state :func:`mmpp_arrivals` with rates ``(rate_on_per_s, 0)`` and exponential period lengths
    of means ``mean_on_s`` and ``mean_off_s``. Mean rate ``rate_on · on / (on + off)``.
    """
    rate = check_real("rate_on_per_s", rate_on_per_s, minimum=0.0)
    on = check_real("mean_on_s", mean_on_s, minimum=0.0, min_inclusive=False)
    off = check_real("mean_off_s", mean_off_s, minimum=0.0, min_inclusive=False)
    duration = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
    check_arrival_count(rate * duration, "rate_on_per_s x duration_s")
    check_work("duration_s / mean of mean_on_s and mean_off_s", duration / ((on + off) / 2),
               MAX_STATE_CHANGES, unit="state changes",
               hint="lengthen the on and off periods or shorten duration_s")
    return mmpp_arrivals((rate_on_per_s, 0.0), (mean_on_s, mean_off_s), duration_s, seed=seed)


def _chunk_bounds(rate_max_per_s, duration: float, chunk: float) -> tuple[np.ndarray, list[float]]:
    """Chunk edges of ``[0, duration)`` and a validated rate bound for each chunk."""
    check_work("nonhomogeneous_arrivals (duration_s / chunk_s)", duration / chunk, MAX_CHUNKS,
               unit="chunks", hint="lengthen chunk_s or shorten duration_s")
    if callable(rate_max_per_s):
        bound_fn = rate_max_per_s
    else:
        bound = check_real("rate_max_per_s", rate_max_per_s, minimum=0.0)

        def bound_fn(t0: float, t1: float, _b: float = bound) -> float:
            return _b
    edges = np.append(np.arange(0.0, duration, chunk), duration)
    bounds = [check_real("rate_max_per_s", bound_fn(float(a), float(b)), minimum=0.0)
              for a, b in zip(edges[:-1], edges[1:], strict=True)]
    return edges, bounds


def _thin(rate_fn, a: float, b: float, bound: float, rng: np.random.Generator) -> np.ndarray:
    """Candidates at rate ``bound`` on ``[a, b)``, each kept with probability λ(t) / bound."""
    n = int(rng.poisson(bound * (b - a)))
    if n == 0:
        return np.empty(0, dtype=float)
    cand = rng.uniform(a, b, size=n)
    lam = np.asarray(rate_fn(cand), dtype=float)
    if lam.shape != cand.shape:
        raise ValueError(f"rate_fn must return one rate per time (shape {cand.shape}), "
                         f"got shape {lam.shape}")
    if not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise ValueError("rate_fn returned a negative or non-finite rate")
    if np.any(lam > bound * (1 + 1e-9)):
        raise ValueError(f"rate_fn reached {float(lam.max()):.6g} requests/s in [{a:.6g}, {b:.6g}) s, "
                         f"above rate_max_per_s = {bound:.6g}; thinning needs a true upper bound")
    keep = rng.uniform(0.0, 1.0, size=n) * bound < lam
    return cand[keep]


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
    duration_s : window length, seconds (> 0); at most :data:`MAX_CHUNKS` chunks.
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
    rng = as_rng(seed)
    edges, bounds = _chunk_bounds(rate_max_per_s, duration, chunk)
    check_arrival_count(sum(bd * (b - a) for bd, a, b in zip(bounds, edges[:-1], edges[1:], strict=True)),
                        "rate_max_per_s x duration_s (thinning candidates)")
    pieces = [_thin(rate_fn, float(a), float(b), bd, rng)
              for a, b, bd in zip(edges[:-1], edges[1:], bounds, strict=True)]
    if not pieces:
        return np.empty(0, dtype=float)
    return sorted_copy(np.concatenate(pieces))
