"""Wall time of a clean book build (every page executed) and of `make test`.

Clean build: `jupyter-book build . -W -n --keep-going --path-output <empty temporary folder>`, so
nothing is cached (the execution cache lives under the output folder). `make test`: the whole
suite as CI runs it, from the repository root (its book build reuses _build/ and its cache when
present; the record says whether it was there). Goals (issue 11): build < 3 min, `make test` < 10 min.

    .venv/bin/python benchmarks/bench_build.py                 # both, print
    .venv/bin/python benchmarks/bench_build.py --record        # and write benchmarks/results/
                                                               # (bench_build.json, bench_make_test.json)
    .venv/bin/python benchmarks/bench_build.py --only build    # or --only test
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD_GOAL_S = 180.0
TEST_GOAL_S = 600.0


def _tool(name: str) -> str:
    local = ROOT / ".venv" / "bin" / name
    return str(local) if local.exists() else (shutil.which(name) or name)


def clean_build_s() -> tuple[float, int]:
    """Seconds of a strict build into an empty folder, and its exit code."""
    with tempfile.TemporaryDirectory(prefix="bench_build_") as out:
        cmd = [_tool("jupyter-book"), "build", ".", "-W", "-n", "--keep-going", "--path-output", out]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        log = ROOT / "_build" / "bench_build-clean-build.log"
        log.parent.mkdir(exist_ok=True)
        log.write_text(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            print(f"the clean build failed; its log: {log.relative_to(ROOT)}", file=sys.stderr)
        return elapsed, proc.returncode


def make_test_s() -> tuple[float, int, bool]:
    """Seconds of `make test`, its exit code, and whether the book's execution cache existed."""
    cache_was_warm = (ROOT / "_build" / ".jupyter_cache").exists()
    t0 = time.perf_counter()
    proc = subprocess.run(["make", "test"], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    log = ROOT / "_build" / "bench_build-make-test.log"
    log.parent.mkdir(exist_ok=True)
    log.write_text(proc.stdout + proc.stderr)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    print(f"   make test said: {' | '.join(tail)}\n   (whole output: {log.relative_to(ROOT)})")
    return elapsed, proc.returncode, cache_was_warm


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description="clean book build and `make test` wall time")
    parser.add_argument("--record", action="store_true", help="write benchmarks/results/")
    parser.add_argument("--only", choices=["build", "test"], help="measure only one of the two")
    args = parser.parse_args(argv)
    rows: list[dict] = []       # -> benchmarks/results/bench_build.json
    test_rows: list[dict] = []  # -> benchmarks/results/bench_make_test.json
    results: dict = {}
    if args.only in (None, "build"):
        seconds, rc = clean_build_s()
        results["clean book build (s)"] = seconds
        ok = rc == 0
        print(f"clean strict book build: {seconds:.0f} s (exit {rc}); goal < {BUILD_GOAL_S:.0f} s")
        rows.append({"figure": "clean book build, every page executed, -W -n"
                               + ("" if ok else f" (FAILED, exit {rc})"),
                     "value": round(seconds, 1), "unit": "s", "goal": f"< {BUILD_GOAL_S:.0f} s",
                     "met": ok and seconds < BUILD_GOAL_S})
    if args.only in (None, "test"):
        seconds, rc, warm = make_test_s()
        results["make test (s)"] = seconds
        state = "book cache warm" if warm else "no book cache"
        print(f"make test: {seconds:.0f} s (exit {rc}, {state}); goal < {TEST_GOAL_S:.0f} s")
        test_rows.append({"figure": f"make test, whole suite ({state}"
                               + (")" if rc == 0 else f"; suite exit {rc})"),
                     "value": round(seconds, 1), "unit": "s", "goal": f"< {TEST_GOAL_S:.0f} s",
                     "met": seconds < TEST_GOAL_S})
    if args.record:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from _record import record

        if rows:
            print("recorded", record("bench_build", "python benchmarks/bench_build.py --only build",
                                     rows))
        if test_rows:
            print("recorded", record("bench_make_test",
                                     "python benchmarks/bench_build.py --only test", test_rows))
    return results


if __name__ == "__main__":
    main()
