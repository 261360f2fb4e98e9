"""Buying the GPU-hours: reserved baseline, on-demand burst, optional spot — a mix finance knows.

A fleet that follows the day needs a few replicas around the clock and many only at the rush.
Reserving (committing to) a GPU costs less per hour but is paid whether it is used or not; on-demand
costs more but only while it runs; spot costs least but can be taken back. The rule that minimises
the bill: reserve the k-th replica when the fleet needs at least k replicas for more than
ρ = reserved price ÷ on-demand price of the hours the reservation is paid for (a replica busy
24·ρ hours a day costs the same either way); run the rest on demand, and optionally put a share of
the burst on spot.

**A day** (:func:`buy`, chapter 6) applies the rule to one day's curve. **A year**
(:func:`buy_year`, the capstone) applies it to the year's curve — the normal days and the exam days
of the scenario — because a reservation is a commitment for a year, not for an exam week: the k-th
replica is reserved when it is in service at least ρ × 8,760 hours of the year. Bought in instances
of the shape the GPU is rented in (:func:`instance_shapes`: 1, 2, 4 or 8 GPUs, as listed in the
data), so a fleet of one-GPU replicas on a GPU sold only in 8-GPU machines pays for whole machines.

Prices are relative to the catalog's on-demand price (an assumption of the story). The reserved
ratio is **one number for the whole book** (:data:`RESERVED_RATIO`, an assumption): the median of
the one rate card in ``vidya_lab/data/procurement.csv`` that lists reserved and on-demand prices
side by side (Hyperstack, 2026, a secondary transcription whose term is not stated: 0.85 for H100,
A100 and B200, 0.70 for H200); :func:`reserved_ratio_readings` gives the per-GPU readings for a
sensitivity. Spot ratios are read per GPU where listed (Google Cloud's H100 spot is 0.60 of its
on-demand). Availability is not a price: in a busy season on-demand capacity may not be there at all
(providers sell reservations for future windows because of it; insufficient-capacity errors for
8-GPU machines are reported on several clouds), which is why the baseline is reserved and the risk
is stated.
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from importlib import resources

from vidya_lab import _validate as v
from vidya_lab.catalog import get_gpu, gpu_id_for

#: Purchase kinds, cheapest commitment last.
KINDS = ("reserved", "on_demand", "spot")
PROCUREMENT_CSV = "procurement.csv"
HOURS_PER_DAY = 24.0
#: Most replicas in service in an hour (hours_in_service counts replica by replica up to the peak).
MAX_REPLICAS = 100_000


def _rows() -> list[dict]:
    text = resources.files("vidya_lab").joinpath("data", PROCUREMENT_CSV).read_text()
    return list(csv.DictReader(text.splitlines()))


def _ratio_rows(kind: str) -> dict[str, list[float]]:
    """{catalog gpu id: [price(kind) / on-demand price of the same provider snapshot]}."""
    by_source: dict[tuple[str, str], dict[str, float]] = {}
    for r in _rows():
        item = r["item"]
        if not item.startswith("price_") or not item.endswith("_per_gpu_hour"):
            continue
        k = item[len("price_"):-len("_per_gpu_hour")]
        provider = r["source"].split(" ")[0]
        try:
            gid = gpu_id_for(r["gpu"])
        except KeyError:
            continue
        by_source.setdefault((provider, gid), {})[k] = float(r["value"])
    out: dict[str, list[float]] = {}
    for (_, gid), prices in by_source.items():
        if kind in prices and "on_demand" in prices:
            out.setdefault(gid, []).append(prices[kind] / prices["on_demand"])
    return out


def reserved_ratio_readings() -> dict[str, float]:
    """{catalog gpu id: reserved ÷ on-demand price} as the rate cards in procurement.csv list them
    (the median where a GPU has several): the evidence behind :data:`RESERVED_RATIO`."""
    return {g: statistics.median(xs) for g, xs in sorted(_ratio_rows("reserved").items())}


def _book_reserved_ratio() -> float:
    readings = list(reserved_ratio_readings().values())
    return float(statistics.median(readings)) if readings else 1.0


#: The book's one reserved ÷ on-demand price ratio, for every GPU type (an assumption: the median
#: of the rate card's readings, :func:`reserved_ratio_readings`; its term is taken as one year).
RESERVED_RATIO = _book_reserved_ratio()
RESERVED_RATIO_SOURCE = ("assumption: one ratio for every GPU, the median of the reserved/on-demand "
                         "readings in procurement.csv (Hyperstack's rate card, 2026, a secondary "
                         "transcription; term not stated, taken as one year)")


def price_ratio(gpu: str, kind: str) -> tuple[float, str]:
    """(price of ``kind`` ÷ on-demand price, where it comes from) for ``gpu``: reserved is the
    book's one ratio (:data:`RESERVED_RATIO`); spot is the ratio read for that GPU where a provider
    lists both, else the median ratio over the GPUs that have one."""
    v.check_choice("kind", kind, KINDS)
    gid = get_gpu(gpu).id
    if kind == "on_demand":
        return 1.0, "the catalog's on-demand price"
    if kind == "reserved":
        return RESERVED_RATIO, RESERVED_RATIO_SOURCE
    table = _ratio_rows("spot")
    if gid in table:
        return statistics.median(table[gid]), f"{kind}/on-demand ratio read for {gid} (procurement.csv)"
    pooled = [x for xs in table.values() for x in xs]
    return statistics.median(pooled), (f"median {kind}/on-demand ratio of "
                                       f"{', '.join(sorted(table))} (no {gid} figure; procurement.csv)")


@dataclass(frozen=True)
class PurchasePlan:
    """How a day's replica curve is bought, and what a month of such days costs (USD)."""

    reserved_replicas: int
    reserved_gpus: int
    reserved_gpu_hours: float
    on_demand_gpu_hours: float
    spot_gpu_hours: float
    monthly_cost: dict
    monthly_cost_all_on_demand: float
    reserved_ratio: float
    spot_ratio: float
    sources: dict

    def as_dict(self) -> dict:
        return {"reserved_replicas": self.reserved_replicas, "reserved_gpus": self.reserved_gpus,
                "reserved_gpu_hours_per_day": self.reserved_gpu_hours,
                "on_demand_gpu_hours_per_day": self.on_demand_gpu_hours,
                "spot_gpu_hours_per_day": self.spot_gpu_hours, "monthly_cost": self.monthly_cost,
                "monthly_cost_all_on_demand": self.monthly_cost_all_on_demand,
                "reserved_ratio": self.reserved_ratio, "spot_ratio": self.spot_ratio,
                "sources": self.sources}


def buy(replicas_by_hour, *, gpus_per_replica: int, gpu: str, days: int = 30,
        spot_share: float = 0.0, on_demand_price_per_gpu_hour: float | None = None) -> PurchasePlan:
    """Split a day's replica curve into reserved, on-demand and spot GPU-hours; price a month.

    Parameters
    ----------
    replicas_by_hour : replicas in service in each hour of the day (the average over the hour is
        fine: fractional values are GPU-hours spread over the hour), 24 values.
    gpus_per_replica : GPUs in one replica (tp × pp).
    gpu : catalog id; its ``price_per_hour_usd`` is the on-demand price unless given.
    days : days in the month of such days.
    spot_share : share of the on-demand burst bought as spot instead (0 to 1; spot can be taken
        back mid-rush, so the default is none).

    Returns a :class:`PurchasePlan`: the k-th replica is reserved when it is needed for at least
    24·ρ hours a day (module docstring).
    """
    hours = v.check_reals("replicas_by_hour", replicas_by_hour, minimum=0.0, maximum=MAX_REPLICAS,
                          max_length=10_000, allow_empty=False)
    if len(hours) != 24:
        raise ValueError(f"replicas_by_hour must give 24 hourly values, got {len(hours)}")
    per = v.check_int("gpus_per_replica", gpus_per_replica, minimum=1, maximum=1024)
    days = v.check_int("days", days, minimum=1, maximum=366)
    share = v.check_fraction("spot_share", spot_share)
    g = get_gpu(gpu)
    od = g.price_per_hour_usd if on_demand_price_per_gpu_hour is None else v.check_real(
        "on_demand_price_per_gpu_hour", on_demand_price_per_gpu_hour, minimum=0.0,
        min_inclusive=False, maximum=1e4)
    rho, rho_src = price_ratio(g.id, "reserved")
    sigma, sigma_src = price_ratio(g.id, "spot")
    peak = int(math.ceil(float(hours.max()) - 1e-9))
    reserved = 0
    for k in range(1, peak + 1):  # hours a day in which the k-th replica is (partly) in service
        if float(sum(min(1.0, max(0.0, h - (k - 1))) for h in hours)) >= HOURS_PER_DAY * rho:
            reserved = k
    total = float(hours.sum()) * per
    reserved_hours = HOURS_PER_DAY * reserved * per
    burst = float(sum(max(0.0, h - reserved) for h in hours)) * per
    spot = share * burst
    on_demand = burst - spot
    cost = {"reserved": days * reserved_hours * od * rho, "on_demand": days * on_demand * od,
            "spot": days * spot * od * sigma}
    cost["total"] = sum(cost.values())
    return PurchasePlan(reserved, reserved * per, reserved_hours, on_demand, spot, cost,
                        days * total * od, rho, sigma,
                        {"on_demand": g.price_source, "reserved": rho_src, "spot": sigma_src})


AVAILABILITY_RISK = ("on-demand capacity for 8-GPU machines is not guaranteed in a busy season: "
                     "clouds sell reservations of future windows (AWS Capacity Blocks) because of "
                     "it, and insufficient-capacity errors for 8 x H100 / 8 x A100 machines are "
                     "reported across providers and zones (procurement.csv); a burst that cannot "
                     "be bought is a burst that is not served")


def _day_curve(replicas_by_hour, name: str = "replicas_by_hour"):
    hours = v.check_reals(name, replicas_by_hour, minimum=0.0, maximum=MAX_REPLICAS,
                          max_length=10_000, allow_empty=False)
    if len(hours) != 24:
        raise ValueError(f"{name} must give 24 hourly values, got {len(hours)}")
    return hours


def hours_in_service(replicas_by_hour) -> list[float]:
    """Hours a day the k-th replica is (partly) in service, for k = 1 … the day's peak:
    Σ over hours of min(1, max(0, replicas(h) − (k − 1))). Never increasing in k."""
    hours = _day_curve(replicas_by_hour)
    peak = int(math.ceil(float(hours.max()) - 1e-9))
    return [float(sum(min(1.0, max(0.0, float(h) - (k - 1))) for h in hours))
            for k in range(1, peak + 1)]


def reserved_replicas(replicas_by_hour, ratio: float) -> int:
    """The rule of :func:`buy` for a reserved ÷ on-demand price ``ratio`` (0 < ratio ≤ 1): reserve
    the k-th replica when it is in service at least 24·ratio hours a day."""
    rho = v.check_fraction("ratio", ratio, allow_zero=False)
    return sum(1 for x in hours_in_service(replicas_by_hour) if x >= HOURS_PER_DAY * rho)


def monthly_cost_with(replicas_by_hour, reserved: int, *, gpus_per_replica: int, gpu: str,
                      days: int = 30, spot_share: float = 0.0) -> dict:
    """A month of such days with ``reserved`` replicas reserved around the clock and the rest on
    demand (a ``spot_share`` of it on spot), USD: ``reserved``, ``on_demand``, ``spot``, ``total``
    (the prices of :func:`buy`: the catalog's on-demand price and :func:`price_ratio`)."""
    hours = _day_curve(replicas_by_hour)
    k = v.check_int("reserved", reserved, minimum=0, maximum=MAX_REPLICAS)
    per = v.check_int("gpus_per_replica", gpus_per_replica, minimum=1, maximum=1024)
    days = v.check_int("days", days, minimum=1, maximum=366)
    share = v.check_fraction("spot_share", spot_share)
    g = get_gpu(gpu)
    od = g.price_per_hour_usd
    burst = float(sum(max(0.0, float(h) - k) for h in hours)) * per
    cost = {"reserved": days * HOURS_PER_DAY * k * per * od * price_ratio(g.id, "reserved")[0],
            "on_demand": days * (1.0 - share) * burst * od,
            "spot": days * share * burst * od * price_ratio(g.id, "spot")[0]}
    cost["total"] = sum(cost.values())
    return cost


# ----------------------------------------------------------------------------- a year, in instances

#: Hours in the year a reservation is paid for (365 days).
HOURS_PER_YEAR = 365 * HOURS_PER_DAY


def instance_shapes(gpu: str) -> tuple[tuple[int, str], ...]:
    """The instance shapes ``gpu`` is rented in: ``(GPUs per instance, source)`` from the
    ``instance_gpus`` rows of procurement.csv, smallest first (empty if none is listed)."""
    gid = get_gpu(gpu).id
    out = {}
    for r in _rows():
        if r["item"] != "instance_gpus":
            continue
        try:
            if gpu_id_for(r["gpu"]) != gid:
                continue
        except KeyError:
            continue
        out.setdefault(int(float(r["value"])), f"{r['source']} ({r['citation']})")
    return tuple(sorted(out.items()))


def instance_gpus_for(gpu: str, gpus_per_replica: int) -> tuple[int, str]:
    """The smallest listed shape that holds a replica of ``gpus_per_replica`` GPUs (its GPUs must
    share one machine), with its source; a replica larger than every shape spans whole instances of
    the largest. With no shape listed: the replica itself (an assumption, said so)."""
    per = v.check_int("gpus_per_replica", gpus_per_replica, minimum=1, maximum=1024)
    shapes = instance_shapes(gpu)
    for n, src in shapes:
        if n >= per:
            return n, src
    if shapes:
        n, src = shapes[-1]
        return n * math.ceil(per / n), src
    return per, "assumption: no instance shape listed for this GPU; a replica is one instance"


def _instances_by_hour(replicas_by_hour, gpus_per_replica: int, instance_gpus: int,
                       name: str = "replicas_by_hour") -> list[float]:
    """Instances billed each hour: GPU-hours as they are when a replica is one instance or
    several; whole instances (rounded up) when an instance holds several replicas."""
    hours = _day_curve(replicas_by_hour, name)
    if instance_gpus <= gpus_per_replica:
        return [float(h) * gpus_per_replica / instance_gpus for h in hours]
    return [float(math.ceil(float(h) * gpus_per_replica / instance_gpus - 1e-9)) for h in hours]


@dataclass(frozen=True)
class YearPlan:
    """A year of normal and exam days bought as a reserved baseline and an on-demand burst (USD).

    ``reserved_instances`` are paid all year (:data:`HOURS_PER_YEAR`); the burst above them is paid
    by the hour. ``hours_in_service`` is, for the k-th instance, the hours of the year it runs (the
    curve the reservation was chosen against), ``threshold_hours`` = ρ × hours of the year.
    """

    instance_gpus: int
    reserved_instances: int
    reserved_gpus: int
    reserved_ratio: float
    threshold_hours: float
    hours_in_service: list
    exam_days: int
    normal_days: int
    yearly_cost: dict
    yearly_cost_all_on_demand: float
    monthly_cost_exam: dict
    monthly_cost_normal: dict
    on_demand_gpu_hours_exam_day: float
    on_demand_gpu_hours_normal_day: float
    sources: dict

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _month(reserved_gpu_hours: float, burst_gpu_hours: float, od: float, rho: float,
           days: int, spot_share: float = 0.0, sigma: float = 1.0) -> dict:
    """``days`` of a day's reserved and burst GPU-hours, USD by kind and in total."""
    cost = {"reserved": days * reserved_gpu_hours * od * rho,
            "on_demand": days * (1.0 - spot_share) * burst_gpu_hours * od,
            "spot": days * spot_share * burst_gpu_hours * od * sigma}
    cost["total"] = cost["reserved"] + cost["on_demand"] + cost["spot"]
    return cost


def buy_year(exam_replicas_by_hour, normal_replicas_by_hour, *, exam_days: int,
             normal_days: int, gpus_per_replica: int, gpu: str, instance_gpus: int | None = None,
             days_per_month: int = 30, spot_share: float = 0.0) -> YearPlan:
    """Reserve against the year's curve, rent the rest on demand; price the year and its months.

    The k-th instance runs ``exam_days × h_exam(k) + normal_days × h_normal(k)`` hours a year
    (:func:`hours_in_service` of each day's instances); it is reserved when that is at least
    :data:`RESERVED_RATIO` × the year's hours. A month of exam days (``days_per_month`` of them)
    pays its share of the reservation and its own burst; so does a month of normal days. Instances
    are ``instance_gpus`` GPUs (default: :func:`instance_gpus_for` the replica); ``spot_share`` of
    the burst is bought as spot (:func:`price_ratio`).
    """
    per = v.check_int("gpus_per_replica", gpus_per_replica, minimum=1, maximum=1024)
    ed = v.check_int("exam_days", exam_days, minimum=0, maximum=366)
    nd = v.check_int("normal_days", normal_days, minimum=0, maximum=366 - ed)
    month = v.check_int("days_per_month", days_per_month, minimum=1, maximum=31)
    share = v.check_fraction("spot_share", spot_share)
    g = get_gpu(gpu)
    shape, shape_src = (instance_gpus_for(g.id, per) if instance_gpus is None else
                        (v.check_int("instance_gpus", instance_gpus, minimum=1, maximum=1024),
                         "given"))
    exam = _instances_by_hour(exam_replicas_by_hour, per, shape, "exam_replicas_by_hour")
    normal = _instances_by_hour(normal_replicas_by_hour, per, shape, "normal_replicas_by_hour")
    he, hn = hours_in_service(exam), hours_in_service(normal)
    n = max(len(he), len(hn))
    year_hours = [ed * (he[k] if k < len(he) else 0.0) + nd * (hn[k] if k < len(hn) else 0.0)
                  for k in range(n)]
    rho = RESERVED_RATIO
    reserved = sum(1 for x in year_hours if x >= rho * (ed + nd) * HOURS_PER_DAY)
    od = g.price_per_hour_usd
    res_day = HOURS_PER_DAY * reserved * shape
    burst = {name: sum(max(0.0, x - reserved) for x in curve) * shape
             for name, curve in (("exam", exam), ("normal", normal))}
    sigma = price_ratio(g.id, "spot")[0]
    m_exam = _month(res_day, burst["exam"], od, rho, month, share, sigma)
    m_normal = _month(res_day, burst["normal"], od, rho, month, share, sigma)
    yearly = _month(res_day, 0.0, od, rho, ed + nd, share, sigma)
    for name, days in (("exam", ed), ("normal", nd)):
        part = _month(0.0, burst[name], od, rho, days, share, sigma)
        yearly["on_demand"] += part["on_demand"]
        yearly["spot"] += part["spot"]
    yearly["total"] = yearly["reserved"] + yearly["on_demand"] + yearly["spot"]
    all_od = (ed * sum(exam) + nd * sum(normal)) * shape * od
    return YearPlan(shape, reserved, reserved * shape, rho, rho * (ed + nd) * HOURS_PER_DAY,
                    year_hours, ed, nd, yearly, all_od, m_exam, m_normal, burst["exam"],
                    burst["normal"], {"on_demand": g.price_source, "reserved": RESERVED_RATIO_SOURCE,
                                      "instance_shape": shape_src,
                                      "spot": price_ratio(g.id, "spot")[1]})
