"""Buying the GPU-hours: reserved baseline, on-demand burst, optional spot — a mix finance knows.

A fleet that follows the day needs a few replicas around the clock and many only at the rush.
Reserving (committing to) a GPU costs less per hour but is paid whether it is used or not; on-demand
costs more but only while it runs; spot costs least but can be taken back. The rule that minimises
the bill: reserve the k-th replica when the fleet needs at least k replicas for more than
ρ = reserved price ÷ on-demand price of the day's hours (a replica busy 24·ρ hours a day costs the
same either way); run the rest on demand, and optionally put a share of the burst on spot.

Prices are relative to the catalog's on-demand price (an assumption of the story), with the ratios
read from providers that publish more than one purchase kind (``vidya_lab/data/procurement.csv``):
one rate card (Hyperstack, 2026) gives reserved/on-demand of 0.85 for H100, A100 and B200 and 0.70
for H200; Google Cloud's H100 spot is 0.60 of its on-demand price. Availability is not a price: in
a busy season on-demand capacity may not be there at all (providers sell reservations for future
windows because of it; insufficient-capacity errors for 8-GPU machines are reported on several
clouds), which is why the baseline is reserved and the risk is stated.
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


def price_ratio(gpu: str, kind: str) -> tuple[float, str]:
    """(price of ``kind`` ÷ on-demand price, where it comes from) for ``gpu``: the ratio read for
    that GPU where a provider lists both, else the median ratio over the GPUs that have one."""
    v.check_choice("kind", kind, KINDS)
    gid = get_gpu(gpu).id
    if kind == "on_demand":
        return 1.0, "the catalog's on-demand price"
    table = _ratio_rows("reserved" if kind == "reserved" else "spot")
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


def _day_curve(replicas_by_hour):
    hours = v.check_reals("replicas_by_hour", replicas_by_hour, minimum=0.0, maximum=MAX_REPLICAS,
                          max_length=10_000, allow_empty=False)
    if len(hours) != 24:
        raise ValueError(f"replicas_by_hour must give 24 hourly values, got {len(hours)}")
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
