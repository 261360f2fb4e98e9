"""Widget update time: from a control change to the widget's new output, p95 over a sweep.

Every ``vidya_lab/widgets/*.py`` that exists (the chapters' ``chNN.py``, then others such as the
capstone's) is found and its builder (a public function of the
module named ``build``/``build_*``/``make_*``/``*_widget`` that needs no argument) is called
inside a real IPython kernel (jupyter_client, the inline matplotlib backend: figures are rendered
as a reader's kernel renders them). Every control of the returned UI is then swept: sliders and
bounded number boxes through 6 evenly spaced values, selections through every option, check boxes
both ways, each control put back afterwards. One change is timed from setting ``.value`` to the
return of the synchronous observers, i.e. until the new output has been computed, drawn and sent
to the front end. The browser's own paint is not included. Goal (issue 11): p95 < 100 ms.

    .venv/bin/python benchmarks/bench_widgets.py            # print the table
    .venv/bin/python benchmarks/bench_widgets.py --record   # and write benchmarks/results/
    .venv/bin/python benchmarks/bench_widgets.py --in-process   # no kernel (quicker, less faithful)
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 100.0
POINTS_PER_RANGE = 6
MARKER = "VIDYA_BENCH_WIDGETS_JSON "
BUILDER_NAME = re.compile(r"^(build|build_\w+|make_\w+|\w+_widget|widget|dashboard)$")


def discover() -> list[str]:
    """Module names of the widgets that exist now: chapters in order (chNN.py), then the others."""
    folder = ROOT / "vidya_lab" / "widgets"
    files = [p for p in folder.glob("*.py") if not p.name.startswith("_")]
    files.sort(key=lambda p: (not re.fullmatch(r"ch\d\d", p.stem), p.stem))
    return [f"vidya_lab.widgets.{p.stem}" for p in files]


def find_builder(module):
    """The function that builds the module's UI: named like a builder, defined there, no required args."""
    candidates = []
    for name, obj in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(obj) or obj.__module__ != module.__name__:
            continue
        required = [p for p in inspect.signature(obj).parameters.values()
                    if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                                                            p.KEYWORD_ONLY)]
        if not required and BUILDER_NAME.match(name):
            candidates.append(obj)
    candidates.sort(key=lambda f: (f.__name__ != "build", f.__name__))
    if not candidates:
        raise LookupError(f"{module.__name__}: no builder function (build(), build_*(), make_*() "
                          "or *_widget() with no required argument)")
    return candidates[0]


def controls_of(ui) -> list:
    """Every enabled control in the widget tree (sliders, number boxes, selections, toggles)."""
    import ipywidgets as w
    from ipywidgets.widgets import widget_bool, widget_float, widget_int, widget_selection

    kinds = (widget_int._Int, widget_float._Float, widget_int._IntRange, widget_float._FloatRange,
             widget_selection._Selection, widget_bool._Bool)
    found, seen, stack = [], set(), [ui]
    while stack:
        node = stack.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, kinds) and "Progress" not in type(node).__name__ \
                and not getattr(node, "disabled", False):
            found.append(node)
        if isinstance(node, w.Box) or hasattr(node, "children"):
            stack.extend(getattr(node, "children", ()) or ())
    return found


def sweep_values(control) -> list:
    """The values a sweep sets on ``control``, the current one excluded."""
    from ipywidgets.widgets import widget_bool, widget_int, widget_selection

    current = control.value
    if isinstance(control, widget_selection._Selection):
        return [("index", i) for i in range(len(control.options)) if i != control.index]
    if isinstance(control, widget_bool._Bool):
        return [("value", not current)]
    is_int = isinstance(control, (widget_int._Int, widget_int._IntRange))
    lo, hi = getattr(control, "min", None), getattr(control, "max", None)
    if isinstance(current, tuple):  # range sliders
        mid = lo + (hi - lo) / 2
        mid = int(round(mid)) if is_int else mid
        values = [(lo, mid), (mid, hi)]
    elif lo is not None and hi is not None:
        step = getattr(control, "step", None) or 0
        points = np.linspace(lo, hi, POINTS_PER_RANGE)
        if step:
            points = lo + np.round((points - lo) / step) * step
        points = np.clip(points, lo, hi)
        values = sorted({int(round(p)) if is_int else float(p) for p in points})
    else:  # an unbounded number box: half and double the current value
        base = current or 1
        values = [type(current)(base / 2) if not is_int else max(int(base // 2), 1),
                  type(current)(base * 2)]
    return [("value", v) for v in values if v != current]


def _label(control, position: int) -> str:
    text = getattr(control, "description", "") or ""
    return f"{type(control).__name__}[{position}] {text}".strip()


def measure_module(module_name: str) -> dict:
    """Build one chapter's widget and time every change of the sweep (milliseconds)."""
    import importlib

    module = importlib.import_module(module_name)
    builder = find_builder(module)
    t0 = time.perf_counter()
    ui = builder()
    build_ms = (time.perf_counter() - t0) * 1e3
    times_ms: list[float] = []
    per_control: dict[str, float] = {}
    errors: list[str] = []
    for position, control in enumerate(controls_of(ui)):
        label = _label(control, position)
        original = ("index", control.index) if hasattr(control, "index") and \
            hasattr(control, "options") else ("value", control.value)
        worst = 0.0
        for attr, value in sweep_values(control) + [original]:
            try:
                t0 = time.perf_counter()
                setattr(control, attr, value)
                dt = (time.perf_counter() - t0) * 1e3
            except Exception as exc:  # a control change must never raise: report it
                errors.append(f"{label} = {value!r}: {type(exc).__name__}: {exc}")
                continue
            times_ms.append(dt)
            worst = max(worst, dt)
        per_control[label] = worst
    return {"module": module_name, "builder": builder.__name__, "build_ms": build_ms,
            "changes": len(times_ms), "times_ms": times_ms, "worst_by_control_ms": per_control,
            "errors": errors}


def measure_in_process(modules: list[str]) -> list[dict]:
    return [measure_module(m) for m in modules]


def _kernel_code(modules: list[str]) -> str:
    return (f"import sys, json\nsys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
            "import bench_widgets as _b\n"
            f"print({MARKER!r} + json.dumps(_b.measure_in_process({modules!r})))\n")


def measure_in_kernel(modules: list[str], timeout_s: float = 900) -> list[dict]:
    """Run the sweep inside a fresh python3 kernel started in the repository root."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ROOT))
    chunks: list[str] = []
    failures: list[str] = []

    def hook(msg):
        kind = msg["header"]["msg_type"]
        if kind == "stream" and msg["content"]["name"] == "stdout":
            chunks.append(msg["content"]["text"])
        elif kind == "error":
            failures.append("\n".join(msg["content"]["traceback"][-5:]))

    try:
        kc.execute_interactive(_kernel_code(modules), timeout=timeout_s, output_hook=hook)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    if failures:
        raise RuntimeError("the sweep failed in the kernel:\n" + "\n".join(failures))
    for line in "".join(chunks).splitlines():
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER):])
    raise RuntimeError("the kernel printed no result")


def summarize(results: list[dict]) -> dict:
    all_ms = np.array([t for r in results for t in r["times_ms"]])
    summary = {"modules": len(results), "changes": int(all_ms.size)}
    if all_ms.size:
        summary.update(p50_ms=float(np.percentile(all_ms, 50)),
                       p95_ms=float(np.percentile(all_ms, 95)), max_ms=float(all_ms.max()))
    return summary


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description="widget update time, p95 over a control sweep")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/")
    parser.add_argument("--in-process", action="store_true", help="no kernel (less faithful)")
    parser.add_argument("modules", nargs="*", help="widget modules (default: every chNN.py)")
    args = parser.parse_args(argv)
    modules = args.modules or discover()
    if not modules:
        print("no vidya_lab/widgets/chNN.py yet: nothing to measure", file=sys.stderr)
        raise SystemExit(1)
    results = measure_in_process(modules) if args.in_process else measure_in_kernel(modules)
    print(f"{'widget':<28}{'changes':>8}{'build ms':>10}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}")
    for r in results:
        t = np.array(r["times_ms"]) if r["times_ms"] else np.array([np.nan])
        print(f"{r['module'].rsplit('.', 1)[-1] + '.' + r['builder'] + '()':<28}{r['changes']:>8}"
              f"{r['build_ms']:>10.0f}{np.percentile(t, 50):>9.1f}{np.percentile(t, 95):>9.1f}"
              f"{t.max():>9.1f}")
        for e in r["errors"]:
            print(f"   ERROR {e}")
    s = summarize(results)
    if s["changes"]:
        verdict = "meets" if s["p95_ms"] < GOAL_MS else "MISSES"
        print(f"all widgets: {s['changes']} changes, p50 {s['p50_ms']:.1f} ms, p95 {s['p95_ms']:.1f} ms"
              f", max {s['max_ms']:.1f} ms: {verdict} the goal p95 < {GOAL_MS:.0f} ms")
    if args.record and s["changes"]:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from _record import record

        names = ", ".join(r["module"].rsplit(".", 1)[-1] for r in results)
        rows = [{"figure": f"widget update, p95 over {s['changes']} control changes ({names})",
                 "value": round(s["p95_ms"], 1), "unit": "ms", "goal": f"< {GOAL_MS:.0f} ms",
                 "met": s["p95_ms"] < GOAL_MS},
                {"figure": "widget update, slowest single change", "value": round(s["max_ms"], 1),
                 "unit": "ms"}]
        rows += [{"figure": f"{r['module'].rsplit('.', 1)[-1]} widget update p95",
                  "value": round(float(np.percentile(r["times_ms"], 95)), 1), "unit": "ms",
                  "goal": f"< {GOAL_MS:.0f} ms",
                  "met": bool(np.percentile(r["times_ms"], 95) < GOAL_MS)}
                 for r in results if r["times_ms"]]
        print("recorded", record("bench_widgets", "python benchmarks/bench_widgets.py", rows))
    if any(r["errors"] for r in results):
        raise SystemExit(1)
    return s


if __name__ == "__main__":
    main()
