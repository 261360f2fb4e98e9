"""How often one student's right answer passes for a classmate's (issue 31, item 5): for each
per-student exercise, over a roster of N students (ids ``s000``…, one fixed secret), the ordered
pairs (A, B), A != B, whose right answer for B's numbers ``judge`` accepts for A's.

    python tools/givens_overlap.py [--students 200] [--ids 2.1,2.3] [--json]

Each distinct set of numbers is solved once (the seed-driven exercises of chapter 1 simulate a
trace each: slow at 200 students). The goal the issue sets is 0 pairs for every exercise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from vidya_lab.exercises import all_exercises, judge, solve
from vidya_lab.exercises import givens as G

SECRET = b"issue-31-overlap-secret-0123456789"


def overlap(ex, n: int) -> dict:
    spec = G.chapter_spec([e for e in all_exercises() if e.chapter == ex.chapter])
    students = [f"s{i:03d}" for i in range(n)]
    drawn = [G.draw_givens(spec, SECRET, s, ex.chapter) for s in students]
    keys = [tuple(sorted(ex.resolve_givens(g).items())) for g in drawn]
    answers: dict = {}
    for k, g in zip(keys, drawn, strict=True):
        if k not in answers:
            answers[k] = solve(ex, g)
    passing = sum(1 for a in range(n) for b in range(n)
                  if a != b and (keys[a] == keys[b] or judge(ex, answers[keys[b]], drawn[a]).right))
    return {"id": ex.id, "students": n, "distinct_givens": len(answers),
            "pairs": n * (n - 1), "passing_pairs": passing}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=200)
    p.add_argument("--ids", default="", help="comma-separated exercise ids (default: all with givens)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    want = {x.strip() for x in args.ids.split(",") if x.strip()}
    rows = []
    for ex in all_exercises():
        if ex.kind == "function" or not ex.givens or (want and ex.id not in want):
            continue
        t0 = time.monotonic()
        row = overlap(ex, args.students)
        row["wall_s"] = round(time.monotonic() - t0, 1)
        rows.append(row)
        if not args.json:
            print(f"{row['id']:>5}  {row['distinct_givens']:4d} distinct numbers  "
                  f"{row['passing_pairs']:6d} of {row['pairs']} pairs pass  ({row['wall_s']} s)",
                  flush=True)
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
