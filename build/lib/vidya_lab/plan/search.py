"""Step 4 of the plan: search the candidate space for the cheapest plan that meets every constraint.

The constraints, each from a chapter, by the name an alternative cites when it fails one:

* ``memory`` — the replica fits its weights and a sequence (chapter 2): only such layouts are
  candidates;
* ``itl`` — a token budget keeps the fullest iteration within the ITL target (chapter 5's
  stall-free budget): a layout without one leaves the candidate space (:func:`~.candidates.prepare`);
* ``isolation`` — the prefix cache is counted as the scenario's isolation allows (chapter 4);
* ``margin`` — on the day busier than the forecast by the margin, the share of requests meeting
  TTFT, TPOT and ITL reaches the attainment target (chapters 5-6; the fluid fleet here, every
  request for the answer);
* ``node_loss`` and ``replica_loss`` — the hour after losing one node (the failure domain), or one
  replica, at that day's peak holds the attainment target (chapter 6; every request,
  :mod:`~vidya_lab.plan.failures`).

The knobs of each candidate are the utilisation ``u`` its policy aims at (:data:`UTILISATIONS`) and
its spares ``k`` (N + k, all day). For each candidate, cheapest by the calculator first:

1. the busiest ``u`` whose margin day holds with no spare (``u_ok``); a lower ``u`` holds too;
2. for each ``u ≤ u_ok``: the spares a node loss needs if the survivors must carry the peak at
   ``u_ok`` (an estimate), and the year's bill of ``(u, k)`` (:func:`bill`: the fluid forecast days,
   exam and normal, bought by :func:`vidya_lab.procurement.buy_year`);
3. the cheapest ``(u, k)`` is simulated losing a node at the peak, with ``k`` grown (or shrunk)
   until it just holds (:func:`~vidya_lab.plan.failures.spares_for`), and billed again.

**Spares, N + k.** At the margin day's peak the fleet aimed at ``u_ok`` runs N replicas (what the
peak needs with nothing lost); the plan runs N + k there, ``k`` being its spares against a node
(``spares_by_failure["node"]``: from aiming below ``u_ok``, which scales with the load, or from a
fixed headroom, whichever bills less). Against one replica, the spares are found the same way on the
``u_ok`` fleet (``spares_by_failure["replica"]``: N + 1 usually suffices).

The plan is the candidate with the lowest yearly bill. A candidate whose year cannot beat the best
— by a bound without simulation (:func:`floor_yearly`), or by its bill with no spare — is not
simulated further (``"cheaper": False``): it could only cost more.
"""

from __future__ import annotations

import math
from dataclasses import replace

from vidya_lab import autoscaling, procurement, sizing
from vidya_lab.plan import failures
from vidya_lab.plan.candidates import Candidate, day_curve, peak_rps
from vidya_lab.plan.confirm import (
    MAX_SPARE_REPLICAS,
    UTILISATIONS,
    Options,
    candidate_model,
    meets,
    simulate,
)
from vidya_lab.scenario import Scenario

#: The constraints, in the order the module docstring gives them.
CONSTRAINTS = ("memory", "itl", "isolation", "margin", "node_loss", "replica_loss")
#: The scheduled policy's own forecast margin (chapter 6's default), for the spares estimate.
POLICY_MARGIN = 0.1


def bill(cand: Candidate, scenario: Scenario, opts: Options, utilisation: float,
         spares: int) -> dict:
    """The year's bill of ``cand`` aimed at ``utilisation`` with ``spares``: the forecast exam day and
    normal day as the fluid fleet runs them, bought as :func:`vidya_lab.procurement.buy_year` buys
    a year of the scenario's exam and normal days. Returns ``year`` (:class:`~vidya_lab.procurement.
    YearPlan`), ``exam`` and ``normal`` (the fluid days' dicts)."""
    days = {d: simulate(cand, scenario, replace(opts, day=d), utilisation=utilisation,
                        headroom=spares, fidelity="fluid") for d in ("exam", "normal")}
    year = procurement.buy_year(days["exam"]["replicas_by_hour"],
                                days["normal"]["replicas_by_hour"],
                                exam_days=scenario.exam_days_per_year,
                                normal_days=scenario.normal_days_per_year,
                                gpus_per_replica=cand.gpus_per_replica, gpu=cand.gpu)
    return {"year": year, "exam": days["exam"], "normal": days["normal"]}


def _spares_estimate(cand: Candidate, scenario: Scenario, opts: Options, u: float, u_ok: float,
                     lost: int) -> int:
    """Spares so that, ``lost`` replicas down at the peak, the rest carry the margin day's peak at
    ``u_ok`` (the busiest utilisation that held): the search's first guess, then simulated."""
    model = candidate_model(cand, scenario)
    planned = autoscaling.replicas_for_rate(peak_rps(scenario, opts.day), model,
                                            margin=POLICY_MARGIN, utilisation=u)
    need = math.ceil(peak_rps(scenario, opts.day, 1.0 + opts.traffic_margin)
                     / (model.capacity_rps() * u_ok) - 1e-9)
    return min(MAX_SPARE_REPLICAS, max(0, need - (planned - lost)))


def _margin_day(cand: Candidate, scenario: Scenario, opts: Options, u: float, k: int) -> dict:
    return simulate(cand, scenario, opts, utilisation=u, headroom=k,
                    traffic_factor=1.0 + opts.traffic_margin, fidelity="fluid")["summary"]


def _busiest_holding(cand: Candidate, scenario: Scenario, opts: Options, tries: list):
    """The busiest utilisation whose margin day (fluid, no spare) meets the target, and the most
    replicas that day runs (what the peak needs with nothing lost); ``(None, None)`` if none."""
    for u in UTILISATIONS:
        s = _margin_day(cand, scenario, opts, u, 0)
        tries.append({"check": "margin", "utilisation": u, "spares": 0,
                      "traffic_factor": 1.0 + opts.traffic_margin,
                      "attainment": s["attainment"], "holds": meets(s, scenario)})
        if meets(s, scenario):
            return u, int(s["max_replicas"])
    return None, None


def floor_yearly(cand: Candidate, scenario: Scenario) -> float:
    """A lower bound of any plan's year on ``cand``, without simulation: each hour's forecast load
    (its mean rate) carried at the calculator's full capacity, in whole instances of the shape the
    GPU is rented in (:func:`vidya_lab.procurement.instance_gpus_for`), every GPU-hour at the
    reserved price, USD."""
    rep = cand.replica()
    cap = sizing.capacity_rps(rep, scenario.prompt_tokens_mean, scenario.answer_tokens_mean,
                              scenario.tpot_target_s, cached_tokens=cand.cached_tokens)
    if cap <= 0:
        return float("inf")
    shape = procurement.instance_gpus_for(cand.gpu, rep.n_gpus)[0]
    gpu_hours = 0.0
    for d, n in (("exam", scenario.exam_days_per_year), ("normal", scenario.normal_days_per_year)):
        curve = day_curve(scenario, d)
        for h in range(24):
            rate = float(curve.rate_per_s([h * 3600.0 + 1800.0])[0])  # the hour's middle
            gpus = rate / cap * rep.n_gpus
            whole = gpus if shape <= rep.n_gpus else math.ceil(gpus / shape - 1e-9) * shape
            gpu_hours += n * whole
    return gpu_hours * rep.gpu.price_per_hour_usd * procurement.RESERVED_RATIO


def evaluate(cand: Candidate, scenario: Scenario, opts: Options,
             best_yearly: float | None = None) -> dict:
    """One candidate through the search (module docstring). Returns a record: ``candidate``,
    ``label``, ``meets`` (every constraint), ``fails`` (the first constraint it fails, or None),
    ``detail``, ``cheaper`` (False when pruned), ``utilisation``, ``spares``,
    ``spares_by_failure``, ``node_loss``, ``replica_loss`` (windows), ``bill`` and ``tries``."""
    rec = {"candidate": cand, "label": cand.label, "meets": False, "fails": None, "detail": "",
           "cheaper": True, "tries": []}
    floor = floor_yearly(cand, scenario)
    if best_yearly is not None and floor >= best_yearly:
        return {**rec, "cheaper": False, "yearly_cost_floor": floor,
                "detail": f"its year costs at least USD {floor:,.0f} (its load at full capacity, "
                          "every GPU-hour at the reserved price)"}
    u_ok, need = _busiest_holding(cand, scenario, opts, rec["tries"])
    if u_ok is None:
        return {**rec, "fails": "margin",
                "detail": f"misses the attainment target on the +{opts.traffic_margin:.0%} day "
                          f"even aimed at {UTILISATIONS[-1]:.0%}"}
    options = []
    for u in (x for x in UTILISATIONS if x <= u_ok):
        lost = failures.replicas_lost(cand, "node",
                                      failures.planned_peak(cand, scenario, opts, u, 0))
        k = _spares_estimate(cand, scenario, opts, u, u_ok, lost)
        options.append((bill(cand, scenario, opts, u, k)["year"].yearly_cost["total"], u, k))
        if k == 0:
            break  # aiming lower only adds replicas
    options.sort()
    cost, u, k0 = options[0]
    floor = bill(cand, scenario, opts, u_ok, 0)["year"].yearly_cost["total"]
    if best_yearly is not None and floor >= best_yearly:
        return {**rec, "cheaper": False, "utilisation": u_ok, "yearly_cost_floor": floor,
                "detail": f"its year costs at least USD {floor:,.0f} even with no spare"}
    try:
        k, node = failures.spares_for(cand, scenario, opts, utilisation=u, loss="node",
                                      start=k0, tries=rec["tries"])
        kr, one = failures.spares_for(cand, scenario, opts, utilisation=u_ok, loss="replica",
                                      start=_spares_estimate(cand, scenario, opts, u_ok, u_ok, 1),
                                      tries=rec["tries"])
    except ValueError as e:
        return {**rec, "fails": "node_loss", "utilisation": u, "detail": str(e)}
    peak = int(_margin_day(cand, scenario, opts, u, k)["max_replicas"])
    return {**rec, "meets": True, "utilisation": u, "utilisation_holding": u_ok, "spares": k,
            "replicas_needed_at_peak": need, "replicas_at_peak": peak,
            "spares_by_failure": {"replica": kr, "node": max(0, peak - need)},
            "node_loss": node, "replica_loss": one, "bill": bill(cand, scenario, opts, u, k)}


def search(prepared: list[Candidate], scenario: Scenario, opts: Options,
           limit: int) -> tuple[dict | None, list[dict]]:
    """Evaluate the first ``limit`` candidates (cheapest by the calculator first) and return
    ``(the cheapest record meeting every constraint or None, every record)``."""
    best, records = None, []
    for cand in prepared[:limit]:
        best_cost = None if best is None else best["bill"]["year"].yearly_cost["total"]
        rec = evaluate(cand, scenario, opts, best_cost)
        records.append(rec)
        if rec["meets"] and (best is None or rec["bill"]["year"].yearly_cost["total"] < best_cost):
            best = rec
    return best, records
