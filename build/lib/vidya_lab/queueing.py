"""Queueing theory: the analytic answers that simulations are checked against.

A replica that serves one request at a time is a single-server queue; a fleet of ``c`` replicas
behind one shared queue is an M/M/c queue. These formulas give exact mean waits for the textbook
models, so the simulators of chapters 5 and 6 can be tested against them and a capacity plan can be
sanity-checked in one line.

Notation (all rates per second, all times in seconds)
-----------------------------------------------------
``λ`` arrival rate (requests/s), ``μ`` service rate of ONE server (requests/s, = 1 / mean service
time), ``c`` servers, offered load ``a = λ/μ`` (erlangs), utilisation ``ρ = a/c`` (must be < 1 for a
queue that does not grow without bound).

* **M/M/1** (Poisson arrivals, exponential service, one server): mean wait in queue
  ``W_q = ρ / (μ − λ)``, mean time in system ``W = 1 / (μ − λ)`` (:func:`mm1_mean_wait_s`,
  :func:`mm1_mean_response_s`).
* **M/G/1** (Pollaczek–Khinchine): ``W_q = λ·E[S²] / (2(1 − ρ))`` with ``E[S²] = (1 + cv²)·E[S]²``
  (``cv`` = coefficient of variation of the service time). Exponential service (cv = 1) gives M/M/1;
  fixed service (cv = 0) gives **M/D/1**: ``W_q = ρ·S / (2(1 − ρ))``, half the M/M/1 wait
  (:func:`mg1_mean_wait_s`, :func:`md1_mean_wait_s`).
* **Erlang B** ``B(c, a)`` (:func:`erlang_b`): the blocking probability of ``c`` servers and no
  queue, by the stable recursion ``B(0) = 1``, ``B(k) = a·B(k−1) / (k + a·B(k−1))``.
* **Erlang C** ``C(c, a)`` (:func:`erlang_c`): the probability that an arrival must wait in an
  M/M/c queue, ``C = c·B / (c − a·(1 − B))``. Then ``W_q = C / (cμ − λ)`` and
  ``P(wait > t) = C·exp(−(cμ − λ)·t)`` (:func:`mmc_mean_wait_s`, :func:`mmc_wait_exceeds`).
* **Staffing** (:func:`servers_needed`): the smallest ``c`` whose mean wait, probability of waiting,
  or probability of waiting longer than ``t`` meets a target. It is what chapter 6 uses to size a
  fleet from an arrival rate.

References: Kleinrock, *Queueing Systems, Vol. 1* (1975), §3.2 (M/M/1), §3.5 (M/M/c), §5.7
(Pollaczek–Khinchine); Gross and Harris, *Fundamentals of Queueing Theory*; A. K. Erlang (1917).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vidya_lab._validate import check_fraction, check_int, check_real, check_work

__all__ = [
    "utilisation",
    "mm1_mean_wait_s",
    "mm1_mean_response_s",
    "mm1_mean_in_system",
    "mg1_mean_wait_s",
    "md1_mean_wait_s",
    "erlang_b",
    "erlang_c",
    "mmc_wait_probability",
    "mmc_mean_wait_s",
    "mmc_mean_response_s",
    "mmc_wait_exceeds",
    "Staffing",
    "servers_needed",
]

#: Most servers :func:`servers_needed` will try before giving up.
MAX_SERVERS = 100_000
#: Most servers the Erlang recursions accept (they take one step per server: ~10 s at this bound).
MAX_ERLANG_SERVERS = 10_000_000


def _rates(arrival_rate_per_s: float, service_rate_per_s: float) -> tuple[float, float]:
    lam = check_real("arrival_rate_per_s", arrival_rate_per_s, minimum=0.0)
    mu = check_real("service_rate_per_s", service_rate_per_s, minimum=0.0, min_inclusive=False)
    return lam, mu


def _stable(lam: float, capacity: float, what: str) -> None:
    if lam >= capacity:
        raise ValueError(f"the queue is unstable: arrival_rate_per_s ({lam:g}) must be below the "
                         f"{what} ({capacity:g} requests/s); the wait grows without bound")


def utilisation(arrival_rate_per_s: float, service_rate_per_s: float, servers: int = 1) -> float:
    """Utilisation ``ρ = λ / (c·μ)`` (0..1 for a stable queue; may exceed 1, meaning overload)."""
    lam, mu = _rates(arrival_rate_per_s, service_rate_per_s)
    c = check_int("servers", servers, minimum=1)
    return lam / (c * mu)


# ----------------------------------------------------------------------------- one server

def mm1_mean_wait_s(arrival_rate_per_s: float, service_rate_per_s: float) -> float:
    """Mean time waiting in queue (before service) of an M/M/1 queue, seconds.

    ``W_q = ρ / (μ − λ)`` with ``ρ = λ/μ``. Example: λ = 1/s, μ = 2/s gives 0.5 s.
    Raises ``ValueError`` if ``λ ≥ μ`` (unstable).
    """
    lam, mu = _rates(arrival_rate_per_s, service_rate_per_s)
    _stable(lam, mu, "service rate")
    return (lam / mu) / (mu - lam)


def mm1_mean_response_s(arrival_rate_per_s: float, service_rate_per_s: float) -> float:
    """Mean time in system (wait + service) of an M/M/1 queue, seconds: ``W = 1 / (μ − λ)``."""
    lam, mu = _rates(arrival_rate_per_s, service_rate_per_s)
    _stable(lam, mu, "service rate")
    return 1.0 / (mu - lam)


def mm1_mean_in_system(arrival_rate_per_s: float, service_rate_per_s: float) -> float:
    """Mean number of requests in an M/M/1 system: ``L = ρ / (1 − ρ)`` (= λ·W, Little's law)."""
    lam, mu = _rates(arrival_rate_per_s, service_rate_per_s)
    _stable(lam, mu, "service rate")
    rho = lam / mu
    return rho / (1.0 - rho)


def mg1_mean_wait_s(arrival_rate_per_s: float, mean_service_s: float,
                    service_cv: float = 1.0) -> float:
    """Mean wait in queue of an M/G/1 queue (Pollaczek–Khinchine), seconds.

    ``W_q = λ·E[S²] / (2(1 − ρ))``, ``E[S²] = (1 + cv²)·E[S]²``, ``ρ = λ·E[S]``.

    Parameters
    ----------
    arrival_rate_per_s : λ, requests/s (≥ 0).
    mean_service_s : E[S], seconds (> 0).
    service_cv : coefficient of variation of the service time (std / mean, ≥ 0):
        1 for exponential (M/M/1), 0 for a fixed time (M/D/1).
    """
    lam = check_real("arrival_rate_per_s", arrival_rate_per_s, minimum=0.0)
    s = check_real("mean_service_s", mean_service_s, minimum=0.0, min_inclusive=False)
    cv = check_real("service_cv", service_cv, minimum=0.0)
    _stable(lam, 1.0 / s, "service rate 1/mean_service_s")
    rho = lam * s
    return lam * (1.0 + cv * cv) * s * s / (2.0 * (1.0 - rho))


def md1_mean_wait_s(arrival_rate_per_s: float, service_s: float) -> float:
    """Mean wait in queue of an M/D/1 queue (every service takes ``service_s``), seconds.

    Pollaczek–Khinchine with cv = 0: ``W_q = ρ·S / (2(1 − ρ))``, half the M/M/1 wait at the same ρ.
    Example: λ = 1/s, S = 0.5 s gives 0.25 s.
    """
    return mg1_mean_wait_s(arrival_rate_per_s, service_s, 0.0)


# ----------------------------------------------------------------------------- c servers

def erlang_b(servers: int, offered_load: float) -> float:
    """Erlang B: probability that all ``c`` servers are busy in a loss system (no queue).

    Stable recursion ``B(0) = 1``, ``B(k) = a·B(k−1) / (k + a·B(k−1))`` (no factorials, no
    overflow). ``offered_load`` ``a = λ/μ`` in erlangs. Example: ``B(10, 4.46) ≈ 0.01`` (the
    classic table: 10 trunks carry 4.46 erlangs at 1 % blocking).
    """
    c = check_int("servers", servers, minimum=0)
    a = check_real("offered_load", offered_load, minimum=0.0)
    check_work("servers", c, MAX_ERLANG_SERVERS, unit="recursion steps (one per server)")
    b = 1.0
    for k in range(1, c + 1):
        b = _erlang_b_step(b, k, a)
    return b


def _erlang_b_step(b_prev: float, k: int, a: float) -> float:
    """``B(k, a)`` from ``B(k − 1, a)``: ``a·B / (k + a·B)``."""
    return a * b_prev / (k + a * b_prev)


def _erlang_c_from_b(c: int, a: float, b: float) -> float:
    """Erlang C from Erlang B at the same ``c`` and ``a < c``: ``c·B / (c − a·(1 − B))``."""
    return c * b / (c - a * (1.0 - b))


def erlang_c(servers: int, offered_load: float) -> float:
    """Erlang C: probability that an arrival waits in an M/M/c queue.

    ``C(c, a) = c·B(c, a) / (c − a·(1 − B(c, a)))`` for ``a < c``; ``a ≥ c`` is unstable (every
    arrival eventually waits) and raises ``ValueError``. Example: ``C(2, 1) = 1/3``.
    """
    c = check_int("servers", servers, minimum=1)
    a = check_real("offered_load", offered_load, minimum=0.0)
    if a >= c:
        raise ValueError(f"the queue is unstable: offered_load ({a:g} erlangs) must be below "
                         f"servers ({c}); every arrival would wait forever")
    return _erlang_c_from_b(c, a, erlang_b(c, a))


def mmc_wait_probability(arrival_rate_per_s: float, service_rate_per_s: float,
                         servers: int) -> float:
    """Probability that an arrival must wait (all ``c`` servers busy): Erlang C at ``a = λ/μ``."""
    lam, mu = _rates(arrival_rate_per_s, service_rate_per_s)
    return erlang_c(servers, lam / mu)


def mmc_mean_wait_s(arrival_rate_per_s: float, service_rate_per_s: float, servers: int) -> float:
    """Mean wait in queue of an M/M/c queue, seconds: ``W_q = C(c, a) / (c·μ − λ)``.

    With ``c = 1`` this is the M/M/1 wait ``ρ / (μ − λ)``.
    """
    lam, mu = _rates(arrival_rate_per_s, service_rate_per_s)
    c = check_int("servers", servers, minimum=1)
    _stable(lam, c * mu, f"capacity of {c} servers")
    return erlang_c(c, lam / mu) / (c * mu - lam)


def mmc_mean_response_s(arrival_rate_per_s: float, service_rate_per_s: float,
                        servers: int) -> float:
    """Mean time in an M/M/c system (wait + service), seconds: ``W_q + 1/μ``."""
    return (mmc_mean_wait_s(arrival_rate_per_s, service_rate_per_s, servers)
            + 1.0 / check_real("service_rate_per_s", service_rate_per_s, minimum=0.0,
                               min_inclusive=False))


def mmc_wait_exceeds(arrival_rate_per_s: float, service_rate_per_s: float, servers: int,
                     wait_s: float) -> float:
    """``P(W_q > t)`` of an M/M/c queue: ``C(c, a)·exp(−(c·μ − λ)·t)``."""
    lam, mu = _rates(arrival_rate_per_s, service_rate_per_s)
    c = check_int("servers", servers, minimum=1)
    t = check_real("wait_s", wait_s, minimum=0.0)
    _stable(lam, c * mu, f"capacity of {c} servers")
    return erlang_c(c, lam / mu) * math.exp(-(c * mu - lam) * t)


# ----------------------------------------------------------------------------- staffing

@dataclass(frozen=True)
class Staffing:
    """The answer of :func:`servers_needed`.

    Attributes
    ----------
    servers : the smallest number of servers meeting every target.
    utilisation : ``λ / (c·μ)`` at that number.
    wait_probability : Erlang C, the probability an arrival waits.
    mean_wait_s : mean wait in queue, seconds.
    wait_exceeds_probability : ``P(W_q > wait_s)`` for the ``wait_s`` given (None if none given).
    """

    servers: int
    utilisation: float
    wait_probability: float
    mean_wait_s: float
    wait_exceeds_probability: float | None


def servers_needed(arrival_rate_per_s: float, service_rate_per_s: float, *,
                   max_mean_wait_s: float | None = None,
                   max_wait_probability: float | None = None,
                   wait_s: float | None = None, max_wait_exceeds_probability: float | None = None,
                   max_utilisation: float | None = None) -> Staffing:
    """The smallest number of servers ``c`` of an M/M/c queue that meets every target given.

    Targets (at least one): ``max_mean_wait_s`` (mean wait in queue, seconds),
    ``max_wait_probability`` (Erlang C), ``wait_s`` with ``max_wait_exceeds_probability`` (the
    "80 % answered within 20 s" service level: ``P(W_q > wait_s) ≤ p``), ``max_utilisation``
    (``λ/(cμ)``). The search starts at the fewest stable servers ``floor(a) + 1`` and adds one at a
    time (every measure falls as ``c`` grows), carrying Erlang B along by its recursion so each
    step costs O(1).

    Example: λ = 10/s, μ = 1/s (10 erlangs) and ``max_wait_probability=0.2`` needs 14 servers
    (``C(13, 10) ≈ 0.285``, ``C(14, 10) ≈ 0.174``).
    """
    lam, mu = _rates(arrival_rate_per_s, service_rate_per_s)
    targets = (max_mean_wait_s, max_wait_probability, max_wait_exceeds_probability,
               max_utilisation)
    if (wait_s is None) != (max_wait_exceeds_probability is None):
        raise ValueError("wait_s and max_wait_exceeds_probability go together: give both or neither")
    if all(t is None for t in targets):
        raise ValueError("servers_needed needs at least one target: max_mean_wait_s, "
                         "max_wait_probability, max_wait_exceeds_probability (with wait_s) or "
                         "max_utilisation")
    if max_mean_wait_s is not None:
        check_real("max_mean_wait_s", max_mean_wait_s, minimum=0.0)
    if max_wait_probability is not None:
        check_fraction("max_wait_probability", max_wait_probability)
    if max_utilisation is not None:
        check_fraction("max_utilisation", max_utilisation, allow_zero=False)
    if wait_s is not None:
        check_real("wait_s", wait_s, minimum=0.0)
        check_fraction("max_wait_exceeds_probability", max_wait_exceeds_probability)
    a = lam / mu
    c = max(1, int(math.floor(a)) + 1)
    check_work("the offered load", c, MAX_SERVERS, unit="servers just to be stable",
               hint="check the rates' units: requests per second")
    b = erlang_b(c, a)
    while c <= MAX_SERVERS:
        cq = _erlang_c_from_b(c, a, b)
        wq = cq / (c * mu - lam)
        exceeds = None if wait_s is None else cq * math.exp(-(c * mu - lam) * wait_s)
        ok = ((max_mean_wait_s is None or wq <= max_mean_wait_s)
              and (max_wait_probability is None or cq <= max_wait_probability)
              and (exceeds is None or exceeds <= max_wait_exceeds_probability)
              and (max_utilisation is None or a / c <= max_utilisation))
        if ok:
            return Staffing(c, a / c, cq, wq, exceeds)
        c += 1
        b = _erlang_b_step(b, c, a)
    raise ValueError(f"no number of servers up to {MAX_SERVERS} meets the targets at "
                     f"{a:g} erlangs; a target of exactly 0 can never be met")
