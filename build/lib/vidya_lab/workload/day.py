"""The day curve: a piecewise-linear arrival rate by hour of day, and the student tutor's day.

:class:`DiurnalProfile` is a rate that repeats every 24 hours; its mean, its expected count over any
window and its largest value on any interval are exact (a piecewise-linear curve integrates by
trapezoids and peaks at a knot or an end), so they cost the same for a day as for a century.
:func:`student_day_profile` is Tanvi's day: quiet night, a 7 am rush, an evening homework peak, ×10 in
exam season. :meth:`DiurnalProfile.arrivals` draws its arrivals by thinning
(:func:`vidya_lab.workload.arrivals.nonhomogeneous_arrivals`) after checking the expected count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vidya_lab._validate import check_bool, check_real, check_reals
from vidya_lab.workload.arrivals import nonhomogeneous_arrivals
from vidya_lab.workload.seeding import check_arrival_count

HOURS_PER_DAY = 24.0
SECONDS_PER_HOUR = 3600.0


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
        hours = tuple(float(h) for h in check_reals("hours", self.hours, minimum=0.0,
                                                    maximum=HOURS_PER_DAY, max_length=10_000))
        rel = tuple(float(r) for r in check_reals("relative", self.relative, minimum=0.0,
                                                  maximum=1.0, max_length=10_000))
        if any(h >= HOURS_PER_DAY for h in hours):
            raise ValueError(f"hours must be < 24 (hours of the day), got {max(hours)}")
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
        check_real("start_hour", self.start_hour, minimum=0.0, maximum=HOURS_PER_DAY,
                   max_inclusive=False)

    @property
    def _scale(self) -> float:
        return self.peak_rate_per_s * self.multiplier

    def _relative_at_hour(self, hour: np.ndarray) -> np.ndarray:
        # wrap: extend the knots one period either side so interpolation crosses midnight
        xs = np.concatenate([np.asarray(self.hours) - HOURS_PER_DAY, self.hours,
                             np.asarray(self.hours) + HOURS_PER_DAY])
        ys = np.tile(self.relative, 3)
        return np.interp(hour, xs, ys)

    def rate_per_s(self, t_s) -> np.ndarray:
        """Arrival rate (requests/s) at times ``t_s`` (seconds from ``t = 0``); vectorised."""
        t = np.asarray(t_s, dtype=float)
        hour = np.mod(self.start_hour + t / SECONDS_PER_HOUR, HOURS_PER_DAY)
        return self._scale * self._relative_at_hour(hour)

    def max_rate_between(self, t0_s: float, t1_s: float) -> float:
        """The largest rate on ``[t0_s, t1_s]``, requests/s (exact: a piecewise-linear curve peaks at
        a knot or an end; an interval of a day or more contains the peak)."""
        t0 = check_real("t0_s", t0_s)
        t1 = check_real("t1_s", t1_s, minimum=t0)
        if t1 - t0 >= HOURS_PER_DAY * SECONDS_PER_HOUR:
            return self._scale * max(self.relative)
        pts = [t0, t1]
        day_s = HOURS_PER_DAY * SECONDS_PER_HOUR
        first = int(math.floor((self.start_hour * SECONDS_PER_HOUR + t0) / day_s)) - 1
        last = int(math.ceil((self.start_hour * SECONDS_PER_HOUR + t1) / day_s)) + 1
        for k in range(first, last):  # at most four days: the interval is shorter than one
            for h in self.hours:
                t = (k * HOURS_PER_DAY + h - self.start_hour) * SECONDS_PER_HOUR
                if t0 <= t <= t1:
                    pts.append(t)
        return float(np.max(self.rate_per_s(np.asarray(pts))))

    def _area_hours(self) -> float:
        """∫ relative over one whole day, relative × hours (trapezoids, wrapping at midnight)."""
        xs = np.append(self.hours, self.hours[0] + HOURS_PER_DAY)
        ys = np.append(self.relative, self.relative[0])
        return float(np.sum((ys[1:] + ys[:-1]) / 2.0 * np.diff(xs)))

    def _cumulative_area_hours(self, hour: float) -> float:
        """∫ relative from hour 0 (midnight of the first day) to ``hour`` ≥ 0, relative × hours."""
        days, h = divmod(hour, HOURS_PER_DAY)
        xs = np.asarray([0.0, *(k for k in self.hours if 0.0 < k < h), h])
        ys = self._relative_at_hour(xs)
        return days * self._area_hours() + float(np.sum((ys[1:] + ys[:-1]) / 2.0 * np.diff(xs)))

    def mean_rate_per_s(self) -> float:
        """The day's mean rate, requests per second (exact integral of the piecewise-linear curve)."""
        return self._scale * self._area_hours() / HOURS_PER_DAY

    def expected_count(self, duration_s: float = 86400.0) -> float:
        """Expected number of arrivals in ``[0, duration_s)``: the exact integral of the rate.

        Formula: peak × multiplier × 3600 × (A(start_hour + duration_s / 3600) − A(start_hour)), with
        A(h) the area under the relative curve from midnight to hour h (whole days times the day's
        area, plus trapezoids up to h). Constant time for any duration.
        """
        duration = check_real("duration_s", duration_s, minimum=0.0)
        end = self.start_hour + duration / SECONDS_PER_HOUR
        area = self._cumulative_area_hours(end) - self._cumulative_area_hours(self.start_hour)
        return self._scale * SECONDS_PER_HOUR * area

    def arrivals(self, duration_s: float = 86400.0, *,
                 seed: int | np.random.Generator) -> np.ndarray:
        """Arrival times (s) over ``[0, duration_s)`` by thinning with exact per-hour bounds.

        The expected count (:meth:`expected_count`) is checked against ``MAX_ARRIVALS`` first, so a
        duration that would generate too many is refused before anything is allocated.
        """
        duration = check_real("duration_s", duration_s, minimum=0.0, min_inclusive=False)
        check_arrival_count(self.expected_count(duration), "DiurnalProfile.arrivals")
        return nonhomogeneous_arrivals(self.rate_per_s, duration,
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
    exam_season : multiply the whole day by ``exam_multiplier`` (True or False).
    exam_multiplier : how much busier exam season is (default 10×, the story's assumption).
    start_hour : hour of the day at ``t = 0``.
    """
    exam = check_bool("exam_season", exam_season)
    mult = check_real("exam_multiplier", exam_multiplier, minimum=0.0) if exam else 1.0
    hours, rel = zip(*STUDENT_DAY_SHAPE, strict=True)
    return DiurnalProfile(hours=hours, relative=rel, peak_rate_per_s=peak_rate_per_s,
                          multiplier=mult, start_hour=start_hour)
