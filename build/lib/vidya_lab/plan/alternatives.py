"""Why the plan wins: the next-cheapest alternatives, each with the constraint it fails or its extra
cost (the constraints of :mod:`vidya_lab.plan.search`).

Two kinds of alternative are listed:

* **other candidates** the search simulated (other GPU types and precisions): each meets every
  constraint and costs more a year, or fails one, or was not simulated further because its year
  costs more than the plan's even with no spare;
* **the plan with one constraint relaxed**, what a calculator would have answered: no spare (fails
  ``node_loss``), the next busier utilisation (fails ``margin``), the engine's default token budget
  (fails ``itl``: its fullest iteration, timed by the cost model, exceeds the target), one cache
  shared by every school (fails ``isolation``: chapter 4's side channel), and candidates the space
  left out (``itl`` or ``tpot``).

Each entry: ``what``, ``gpu``, ``precision``, ``tp``, ``pp``, ``fails`` (a constraint name, or
None), ``detail``, and where it was priced ``yearly_cost`` and ``extra_cost_per_year`` (USD, against
the plan).
"""

from __future__ import annotations

from dataclasses import replace

from vidya_lab import sizing
from vidya_lab.plan.candidates import Candidate, prepare
from vidya_lab.plan.confirm import UTILISATIONS
from vidya_lab.scenario import Scenario


def _entry(what: str, c: Candidate, fails: str | None, detail: str,
           yearly: float | None = None, plan_yearly: float | None = None) -> dict:
    return {"what": what, "gpu": c.gpu, "precision": c.precision, "tp": c.layout.tp,
            "pp": c.layout.pp, "fails": fails, "detail": detail, "yearly_cost": yearly,
            "extra_cost_per_year": None if yearly is None or plan_yearly is None
            else yearly - plan_yearly}


def _records(best: dict, records: list[dict], plan_yearly: float) -> list[dict]:
    out = []
    for r in records:
        if r is best:
            continue
        c = r["candidate"]
        if r["meets"]:
            y = r["bill"]["year"].yearly_cost["total"]
            out.append(_entry(f"{c.label}, aimed at {r['utilisation']:.0%} with {r['spares']} "
                              "spares", c, None, "meets every constraint", y, plan_yearly))
        elif not r["cheaper"]:
            out.append(_entry(c.label, c, None, r["detail"], r["yearly_cost_floor"], plan_yearly))
        else:
            out.append(_entry(c.label, c, r["fails"], r["detail"]))
    return out


def _relaxed(best: dict, scenario: Scenario) -> list[dict]:
    c = best["candidate"]
    out = []
    lean = best.get("lean_node_loss")
    if lean is not None:
        out.append(_entry(f"the plan aimed at {lean['utilisation']:.0%} with no spare (N + 0: "
                          f"{best['replicas_needed_at_peak']} replicas at the peak)", c,
                          "node_loss" if lean["attainment"] < scenario.attainment_target
                          else None,
                          f"the half hour after losing {lean['lost_replicas']} replicas (a node) "
                          f"at the peak: attainment {lean['attainment']:.2%}"))
    busier = [x for x in UTILISATIONS if x > best["utilisation_holding"]]
    u = best["utilisation"]
    if busier:
        tried = {t["utilisation"]: t["attainment"] for t in best["tries"]
                 if t.get("check") == "margin"}
        nxt = busier[-1]
        out.append(_entry(f"the plan aimed at {nxt:.0%} instead of {u:.0%}", c, "margin",
                          f"+{best['node_loss']['traffic_factor'] - 1:.0%} day: attainment "
                          f"{tried.get(nxt, float('nan')):.2%}"))
    default = replace(c, budget_tokens=None)
    r = default.replica()
    b = sizing.slo_batch(r, scenario.prompt_tokens_mean, scenario.answer_tokens_mean,
                         scenario.tpot_target_s, c.cached_tokens)
    full = sizing.cycle(r, max(b, 1), scenario.prompt_tokens_mean, scenario.answer_tokens_mean,
                        c.cached_tokens)["step_mixed_s"]
    out.append(_entry(f"the plan with the engine's default token budget ({r.max_batched_tokens:,} "
                      f"tokens, not {c.budget_tokens:,})", c, "itl",
                      f"its fullest iteration takes {full:.2f} s, over the "
                      f"{scenario.itl_target_s:.2f} s ITL target"))
    if scenario.isolation != "shared":
        shared, _ = prepare(c, replace(scenario, isolation="shared"))
        if shared is not None:
            out.append(_entry(
                "the plan with one prefix cache shared by every school", shared, "isolation",
                f"{shared.cached_tokens:,} cached tokens instead of {c.cached_tokens:,}, "
                f"{shared.calculator['gpus']} GPUs at the peak by the calculator, but a student "
                "can time another school's uploads (chapter 4)"))
    return out


def alternatives(best: dict, records: list[dict], excluded: list[tuple[Candidate, str]],
                 scenario: Scenario) -> list[dict]:
    """The alternatives to the plan ``best`` (module docstring), cheapest candidates first."""
    plan_yearly = best["bill"]["year"].yearly_cost["total"]
    out = _records(best, records, plan_yearly) + _relaxed(best, scenario)
    for c, why in excluded:
        out.append(_entry(f"{c.label} (left out of the candidate space)", c,
                          why.split(":")[0].lower(), why))
    return out

