"""Time of a clean book build (every page executed), each page's execution, and of `make test`.

Clean build: `jupyter-book build . -W -n --keep-going --path-output <empty temporary folder>`, so
nothing is cached (the execution cache lives under the output folder). Each page's execution time
is the one the build itself recorded (jupyter-cache's ``execution_seconds`` for the page, in the
build's ``.jupyter_cache``): the build's execution report. `make test`: the whole suite as CI runs
it, from the repository root (its book build reuses _build/ and its cache when present; the record
says whether it was there): its wall time, pytest's own time (the "in N s" of its last line) and
its slowest tests (``--durations``, written to ``benchmarks/results/pytest_durations.txt``).
CPU seconds (user + system of the command and everything it started) are recorded beside wall
seconds: this machine's two cores are shared, so wall time moves with the load (recorded too).

Goals (issue 28): `make book` < 4 min and `make test` < 8 min of pytest time from a fresh clone on a
2-core machine, every page's execution < 30 s.

    .venv/bin/python benchmarks/bench_build.py                 # build and test, print
    .venv/bin/python benchmarks/bench_build.py --record        # and write benchmarks/results/
                                                               # (bench_build.json, bench_make_test.json)
    .venv/bin/python benchmarks/bench_build.py --only build    # or --only test
    .venv/bin/python benchmarks/bench_build.py --only pages    # the pages of the last build in _build/
    .venv/bin/python benchmarks/bench_build.py --page chapters/06_autoscaling.md [--record]
                                             # one page alone, in its own kernel (nbclient), with
                                             # an empty simulation cache and then with it warm

The clean build runs as `make book` does, with ``VIDYA_LAB_CACHE`` (:mod:`vidya_lab._cache`) set
to an empty folder of its own: a fresh clone's first build, whose pages share the days they
simulate in common; ``--page`` shows what a re-run costs once the cache holds the page's days.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD_GOAL_S = 240.0
TEST_GOAL_S = 480.0
PAGE_GOAL_S = 30.0
DURATIONS = ROOT / "benchmarks" / "results" / "pytest_durations.txt"


def _tool(name: str) -> str:
    local = ROOT / ".venv" / "bin" / name
    return str(local) if local.exists() else (shutil.which(name) or name)


def _timed(cmd: list[str], log_name: str, env: dict | None = None) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (the command and its children), exit code and output of ``cmd``
    (``env``: variables added to this process's environment)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          env=None if env is None else dict(os.environ, **env))
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = proc.stdout + proc.stderr
    log = ROOT / "_build" / log_name
    log.parent.mkdir(exist_ok=True)
    log.write_text(out)
    return wall, cpu, proc.returncode, out


def page_seconds(build_dir: Path) -> dict[str, float]:
    """Each executed page's execution time as the build recorded it, seconds (by document)."""
    from jupyter_cache import get_cache

    cache = build_dir / ".jupyter_cache"
    if not cache.is_dir():
        return {}
    out = {}
    for rec in get_cache(str(cache)).list_cache_records():
        seconds = (rec.data or {}).get("execution_seconds")
        if seconds is not None:
            path = Path(rec.uri).resolve().with_suffix("")
            doc = path.relative_to(ROOT) if path.is_relative_to(ROOT) else Path(*path.parts[-2:])
            out[str(doc)] = float(seconds)
    return dict(sorted(out.items()))


def clean_build() -> tuple[float, float, int, dict[str, float]]:
    """Wall and CPU seconds of a strict build into an empty folder, its exit code, and each page's
    execution seconds."""
    with tempfile.TemporaryDirectory(prefix="bench_build_") as out:
        cmd = [_tool("jupyter-book"), "build", ".", "-W", "-n", "--keep-going", "--path-output", out]
        wall, cpu, rc, _ = _timed(cmd, "bench_build-clean-build.log",
                                  env={"VIDYA_LAB_CACHE": str(Path(out) / "vidya_cache")})
        if rc != 0:
            print("the clean build failed; its log: _build/bench_build-clean-build.log",
                  file=sys.stderr)
        return wall, cpu, rc, page_seconds(Path(out) / "_build")


def make_test() -> tuple[float, float, int, bool, float | None, list[str]]:
    """`make test`: wall and CPU seconds, exit code, whether the book's cache existed, pytest's own
    seconds and its slowest tests (the lines of its durations report)."""
    cache_was_warm = (ROOT / "_build" / ".jupyter_cache").exists()
    wall, cpu, rc, out = _timed(["make", "test"], "bench_build-make-test.log")
    tail = out.strip().splitlines()[-3:]
    print(f"   make test said: {' | '.join(tail)}\n   (whole output: _build/bench_build-make-test.log)")
    found = re.findall(r"=+ .*? in ([0-9.]+)s(?: \([0-9:]+\))? =+", out)
    pytest_s = float(found[-1]) if found else None
    slowest = [line for line in out.splitlines()
               if re.match(r"^[0-9.]+s (call|setup|teardown) ", line)]
    return wall, cpu, rc, cache_was_warm, pytest_s, slowest


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def build_rows() -> list[dict]:
    wall, cpu, rc, pages = clean_build()
    ok = rc == 0
    print(f"clean strict book build: {wall:.0f} s wall, {cpu:.0f} s CPU (exit {rc}); goal "
          f"< {BUILD_GOAL_S:.0f} s; {_load()}")
    rows = [{"figure": "clean book build, every page executed, -W -n"
                       + ("" if ok else f" (FAILED, exit {rc})"),
             "value": round(wall, 1), "unit": "s", "goal": f"< {BUILD_GOAL_S:.0f} s",
             "met": ok and wall < BUILD_GOAL_S},
            {"figure": "clean book build, CPU (user + system, all processes)",
             "value": round(cpu, 1), "unit": "s"}]
    return rows + pages_rows(pages)


def pages_rows(pages: dict[str, float]) -> list[dict]:
    rows = []
    for doc, seconds in pages.items():
        print(f"   {doc:32s} {seconds:6.1f} s")
        rows.append({"figure": f"page execution, {doc}", "value": round(seconds, 1), "unit": "s",
                     "goal": f"< {PAGE_GOAL_S:.0f} s", "met": seconds < PAGE_GOAL_S})
    return rows


def run_page(page: Path, cache_dir: str) -> tuple[float, float]:
    """Wall and CPU seconds (the kernel's, user + system, counted once it has exited) to execute
    ``page`` (a MyST notebook) top to bottom in a fresh kernel, from its own folder, with
    ``VIDYA_LAB_CACHE=cache_dir``; raises if a cell fails."""
    import jupytext
    import nbclient

    nb = jupytext.read(page)
    os.environ["VIDYA_LAB_CACHE"] = cache_dir  # the kernel inherits this process's environment
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(page.parent)}})
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    client.execute()  # starts the kernel, runs every cell, shuts the kernel down
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def page_alone_rows(page: str) -> list[dict]:
    """One page executed alone twice: with an empty simulation cache, then with it warm."""
    path = (ROOT / page).resolve()
    doc = str(path.relative_to(ROOT).with_suffix(""))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_page_") as cache:
        for state in ("empty", "warm"):
            load = _load()
            seconds, cpu = run_page(path, cache)
            print(f"   {doc} alone, simulation cache {state}: {seconds:.1f} s wall, {cpu:.1f} s "
                  f"CPU (kernel); {load} at its start, {_load()} at its end")
            rows.append({"figure": f"page execution alone, {doc}, simulation cache {state}, wall "
                                   f"({load} at its start)",
                         "value": round(seconds, 1), "unit": "s",
                         "goal": f"< {PAGE_GOAL_S:.0f} s", "met": seconds < PAGE_GOAL_S})
            rows.append({"figure": f"page execution alone, {doc}, simulation cache {state}, CPU "
                                   "of its kernel (user + system)",
                         "value": round(cpu, 1), "unit": "s"})
    return rows


def test_rows() -> list[dict]:
    wall, cpu, rc, warm, pytest_s, slowest = make_test()
    state = "book cache warm" if warm else "no book cache"
    print(f"make test: {wall:.0f} s wall, {cpu:.0f} s CPU, pytest {pytest_s} s (exit {rc}, "
          f"{state}); goal: pytest < {TEST_GOAL_S:.0f} s; {_load()}")
    DURATIONS.write_text(f"# `make test` ({state}), {_load()}: its slowest tests\n"
                         + "\n".join(slowest) + "\n")
    suffix = "" if rc == 0 else f"; suite exit {rc}"
    rows = [{"figure": f"make test, wall, whole suite ({state}{suffix})", "value": round(wall, 1),
             "unit": "s"},
            {"figure": "make test, CPU (user + system, all processes)", "value": round(cpu, 1),
             "unit": "s"}]
    if pytest_s is not None:
        rows.append({"figure": f"make test, pytest time ({state}{suffix})",
                     "value": round(pytest_s, 1), "unit": "s", "goal": f"< {TEST_GOAL_S:.0f} s",
                     "met": rc == 0 and pytest_s < TEST_GOAL_S})
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description="clean book build, page and `make test` times")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/")
    parser.add_argument("--only", choices=["build", "test", "pages"],
                        help="measure one: the clean build (with its pages), `make test`, or the "
                             "pages of the build already in _build/")
    parser.add_argument("--page", help="execute this one page alone (a path such as "
                                           "chapters/06_autoscaling.md), cache empty then warm")
    args = parser.parse_args(argv)
    if args.page:
        rows, test = page_alone_rows(args.page), []
    else:
        rows = build_rows() if args.only in (None, "build") else []
        if args.only == "pages":
            rows = pages_rows(page_seconds(ROOT / "_build"))
        test = test_rows() if args.only in (None, "test") else []
    if args.record:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from _record import record

        if rows and args.page:
            name = "bench_page_" + Path(args.page).stem
            print("recorded", record(name, f"python benchmarks/bench_build.py --page {args.page}",
                                     rows))
        elif rows:
            what = "pages" if args.only == "pages" else "build"
            print("recorded", record("bench_build", f"python benchmarks/bench_build.py --only {what}",
                                     rows))
        if test:
            print("recorded", record("bench_make_test",
                                     "python benchmarks/bench_build.py --only test", test))
    return {r["figure"]: r["value"] for r in rows + test}


if __name__ == "__main__":
    main()
