"""How sure is a benchmark's p99, and how long must it run: intervals against the real spread.

A p99 measured on one queue is set by its few worst bursts, and the latencies of neighbouring
requests are correlated (a request that queued behind a burst is followed by others that queued
behind it). Three views of the same uncertainty:

* :func:`p99_over_runs` — the truth a reader can only get from a simulator: the p99 of many
  **independent** runs of the same length, one per seed. Their spread is what one run can tell.
* :func:`one_run_intervals` — what one run says about itself: the bootstrap interval, which
  resamples the requests as if they were independent (too narrow on a queue), and the batch-means
  interval on the time-ordered series (:func:`vidya_lab.slo.batch_means_ci`), whose batches are
  long stretches of the run and so carry the correlation with them.
* :func:`duration_for_precision` — the length a run needs for a batch-means half-width of a given
  fraction of the estimate: the half-width shrinks as one over the square root of the length, so
  ``duration = pilot × (half-width / (fraction × estimate))²``, padded (given the pilot's number of
  batches) for the pilot's own half-width being an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vidya_lab import slo
from vidya_lab._validate import check_instance, check_instances, check_int, check_real, check_work
from vidya_lab.toyserver import ToyServer, simulate, tutor_workload

__all__ = ["MAX_RUNS", "RunIntervals", "duration_for_precision", "one_run_intervals",
           "p99_over_runs"]

#: Most independent runs :func:`p99_over_runs` may simulate.
MAX_RUNS = 1000


def p99_over_runs(rate_per_s: float, duration_s: float, seeds, *, q: float = 99.0,
                  server: ToyServer | None = None) -> np.ndarray:
    """The ``q``-th percentile of TTFT (seconds) of one independent toy run per seed.

    Each run is Tanvi's traffic at ``rate_per_s`` for ``duration_s`` on ``server`` (default
    :class:`~vidya_lab.toyserver.ToyServer`), from an empty server, as a benchmark starts.
    """
    server = ToyServer() if server is None else check_instance("server", server, ToyServer)
    seeds = [check_int(f"seeds[{i}]", s, minimum=0) for i, s in enumerate(
        check_instances("seeds", seeds, int, "seed (int)"))]
    check_work("p99_over_runs", len(seeds), MAX_RUNS, unit="runs", hint="use fewer seeds")
    check_real("q", q, minimum=0.0, maximum=100.0)
    return np.asarray([slo.percentile(slo.ttft_s(simulate(
        tutor_workload(rate_per_s, duration_s, seed=s), server)), q) for s in seeds])


@dataclass(frozen=True)
class RunIntervals:
    """What one run says about its own ``q``-th percentile (seconds).

    Attributes
    ----------
    estimate : the percentile over the run's finished requests.
    bootstrap : (low, high), the percentile bootstrap (requests resampled as independent).
    batch_means : the batch-means interval on the time-ordered series.
    requests : finished requests the percentile is taken over.
    """

    estimate: float
    bootstrap: tuple[float, float]
    batch_means: slo.BatchMeansCI
    requests: int

    @property
    def bootstrap_half_width(self) -> float:
        return (self.bootstrap[1] - self.bootstrap[0]) / 2

    @property
    def batch_means_half_width(self) -> float:
        return (self.batch_means.high - self.batch_means.low) / 2


def one_run_intervals(timelines, *, q: float = 99.0, batches: int = 10, confidence: float = 0.95,
                      n_boot: int = 1000, seed: int = 0) -> RunIntervals:
    """Both 95 % intervals of the TTFT ``q``-th percentile of one run (requests in arrival order).

    ``batches`` contiguous batches for batch means (each should span several busy periods of the
    queue; fewer, longer batches are safer); ``n_boot`` resamples for the bootstrap, seeded.
    """
    t = slo.as_timelines(timelines)
    if np.any(np.diff(t.arrival_s) < 0):  # the series must be in time order
        t = t[np.argsort(t.arrival_s, kind="stable")]
    ttft = slo.ttft_s(t)
    boot = slo.bootstrap_percentile_ci(ttft, q, confidence=confidence, n_boot=n_boot, seed=seed)
    bm = slo.batch_means_ci(ttft, q, batches=batches, confidence=confidence)
    return RunIntervals(estimate=slo.percentile(ttft, q), bootstrap=boot, batch_means=bm,
                        requests=int(ttft.size))


def duration_for_precision(pilot_duration_s: float, half_width_s: float, estimate_s: float,
                           rel_half_width: float, *, batches: int | None = None,
                           assurance: float = 0.9) -> float:
    """How long to run (seconds) for a half-width of ``rel_half_width`` of the estimate.

    ``pilot × (half_width / (rel_half_width × estimate))²``: a batch-means half-width falls as
    ``1/√length`` once the batches are long enough, so halving it takes four times the run.

    That uses the pilot's half-width as if it were exact, but it is itself estimated from the
    spread of ``batches`` batch statistics: with ten batches it is off by more than a quarter
    about three pilots in ten, and it understates the true half-width (so the run falls short)
    in 56 % of pilots (``P(χ²_9 < 9)``).
    Given ``batches`` (the pilot's ``b``), the length is multiplied by
    ``(b − 1) / χ²_{1 − assurance, b − 1}``, the factor by which the pilot's variance may
    understate the true one (``s² (b − 1) / σ² ~ χ²_{b−1}``), so that the run is long enough with
    probability ``assurance`` (e.g. × 2.16 for ``b = 10`` at 0.9). Still an approximation (the
    estimate moves too as the run grows): check with the longer run.
    """
    pilot = check_real("pilot_duration_s", pilot_duration_s, minimum=0.0, min_inclusive=False)
    h = check_real("half_width_s", half_width_s, minimum=0.0)
    est = check_real("estimate_s", estimate_s, minimum=0.0, min_inclusive=False)
    r = check_real("rel_half_width", rel_half_width, minimum=0.0, min_inclusive=False, maximum=1.0)
    length = pilot * (h / (r * est)) ** 2
    if batches is None:
        return length
    b = check_int("batches", batches, minimum=5, maximum=10_000)
    a = check_real("assurance", assurance, minimum=0.5, maximum=0.999)
    return length * (b - 1) / slo.chi_square_quantile(1.0 - a, b - 1)
