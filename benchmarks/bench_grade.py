"""Speed of ``vidya-lab grade``: notebooks a minute for a class of 30 with ``--jobs 2``.

Run: ``.venv/bin/python benchmarks/bench_grade.py [--record] [--tree PATH] [--chapter NAME]``.
It releases one chapter (default chapter 1, the one with per-student numbers and a function
exercise, so two kernels per notebook) for 30 students, hands in 15 complete solutions and 15
untouched notebooks, and times ``vidya-lab grade --jobs 2`` end to end, in wall-clock seconds (what an
instructor waits; the machine is shared, so the load average before and after is printed and
recorded with the figure). ``--tree`` grades with another checkout of the package (for a before/after
comparison with an older commit, which releases without a roster if it has none).

Goal: at least 10 notebooks a minute. ``--record`` writes benchmarks/results/bench_grade.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDENTS = 30
GOAL_PER_MIN = 10.0


def _cli(tree: Path, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([sys.executable, "-m", "vidya_lab", *args], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _class(tree: Path, tmp: Path, chapter: str) -> tuple[Path, list[str]]:
    """Release ``chapter`` and build the class's submissions; returns (folder, extra grade args)."""
    ids = [f"s{i:02d}" for i in range(STUDENTS)]
    per_student = "--roster" in _cli(tree, "release", "--help").stdout
    args = [str(tmp / "rel"), "--solutions", str(tmp / "sol"), "--chapters", str(tree / "chapters")]
    extra: list[str] = []
    if per_student:
        (tmp / "roster.csv").write_text("id\n" + "\n".join(ids) + "\n")
        (tmp / "class.secret").write_text("benchmark class secret, fixed for repeatable runs\n")
        args += ["--roster", str(tmp / "roster.csv"), "--secret-file", str(tmp / "class.secret")]
        extra = ["--roster", str(tmp / "roster.csv"), "--secret-file", str(tmp / "class.secret")]
    out = _cli(tree, "release", *args)
    if out.returncode not in (0, 1):
        raise SystemExit(f"release failed: {out.stderr[-2000:]}")
    subs = tmp / "subs"
    for i, sid in enumerate(ids):
        kind = "sol" if i % 2 == 0 else "rel"
        src = tmp / kind / (sid if per_student else "") / f"{chapter}.ipynb"
        (subs / sid).mkdir(parents=True)
        shutil.copyfile(src, subs / sid / f"{chapter}.ipynb")
    return subs, extra


def main(tree: Path = ROOT, chapter: str = "01_is_it_working") -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        tmp = Path(tmp)
        subs, extra = _class(tree, tmp, chapter)
        load_before = os.getloadavg()[0]
        t0 = time.monotonic()
        out = _cli(tree, "grade", str(subs), "--out", str(tmp / "scores.csv"), "--jobs", "2",
                   "--timeout", "120", "--quiet", *extra)
        wall = time.monotonic() - t0
        load_after = os.getloadavg()[0]
        if out.returncode != 0:
            raise SystemExit(f"grade failed: {out.stderr[-2000:]}")
        rows = (tmp / "scores.csv").read_text().splitlines()[1:]
    per_min = STUDENTS / wall * 60
    print(f"tree {tree}, {chapter}: {STUDENTS} notebooks in {wall:.0f} s with --jobs 2 = "
          f"{per_min:.1f} notebooks/min (load average {load_before:.1f} before, "
          f"{load_after:.1f} after; {len(rows)} rows)")
    return {f"grade a class of 30, {chapter}, --jobs 2 (notebooks/min)": per_min,
            "load average before (1 min)": load_before}


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--record", action="store_true")
    p.add_argument("--tree", type=Path, default=ROOT)
    p.add_argument("--chapter", default="01_is_it_working")
    a = p.parse_args()
    figures = main(a.tree.resolve(), a.chapter)
    if a.record:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _record import record_figures

        print("recorded", record_figures("bench_grade", figures,
                                         [("grade a class", ">=", GOAL_PER_MIN, "notebooks/min")]))
