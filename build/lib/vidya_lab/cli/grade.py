"""``vidya-lab grade SUBMISSIONS_DIR --out scores.csv``: grade a folder of notebooks, robustly."""

from __future__ import annotations

import os


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "grade",
        help="grade a folder of submitted notebooks into a CSV and feedback files",
        description="Run every .ipynb below SUBMISSIONS_DIR in its own sandboxed kernels (per-cell "
                    "and per-notebook time limits), read the student's answers back as JSON and "
                    "score them in this process, for each student's own numbers. Writes one CSV "
                    "row and one feedback file per notebook. What the sandbox holds on one "
                    "account, and what needs a container: the book's 'For instructors' page.",
    )
    p.add_argument("submissions", metavar="SUBMISSIONS_DIR")
    p.add_argument("--out", required=True, metavar="CSV", help="where to write the scores")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="time limit per cell, seconds (default 60)")
    p.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2), metavar="N",
                   help="notebooks graded at once (default: half the CPUs)")
    p.add_argument("--notebook-timeout", type=float, default=600.0, metavar="SECONDS",
                   help="everything one notebook may cost: reading it, its kernels, its cells and "
                        "its answers, seconds (default 600)")
    p.add_argument("--feedback", metavar="DIR",
                   help="folder for the per-student feedback files (default: <CSV name>_feedback/)")
    p.add_argument("--secret-file", metavar="FILE",
                   help="the class secret `vidya-lab release --roster` drew each student's own "
                        "numbers from (keep it where students cannot read it)")
    p.add_argument("--roster", metavar="CSV",
                   help="the class list (a CSV with an 'id' column): tells each submission's "
                        "student from its folder or file name, flags a notebook claiming another")
    p.add_argument("--isolation", default="auto",
                   choices=("auto", "bubblewrap", "unshare", "process"),
                   help="sandbox of each kernel (default auto: bubblewrap if installed, else "
                        "unshare, else process; each CSV row names the one it had)")
    p.add_argument("--hidden-cases", type=int, default=5, metavar="N",
                   help="random grading cases per function exercise (default 5)")
    p.add_argument("--cases", metavar="FILE",
                   help='JSON of extra grading cases, {"2.3": [[arg, ...], ...]}; keep it where '
                        "students cannot read it ('-': read it from stdin)")
    p.add_argument("--seed", type=int,
                   help="seed of the random grading cases, to reproduce a run in a test (default: "
                        "a fresh secret one, never printed; a command line is visible to every "
                        "process of the account)")
    p.add_argument("--chapter", type=int,
                   help="grade every notebook as this chapter (default: detect it)")
    p.add_argument("--memory-limit-gib", type=float, default=4.0, metavar="GIB",
                   help="memory of one notebook's kernel and every process it starts, GiB = 2**30 "
                        "bytes (default 4; 0: none)")
    p.add_argument("--kernel", default="python3",
                   help="Jupyter kernel (an IPython kernel) whose Python runs the notebooks")
    p.add_argument("--registry", metavar="MODULE",
                   help="a module whose EXERCISES list replaces the package's answer key (your own "
                        "exercises; importable here, e.g. from PYTHONPATH; kernels never see it)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", action="store_true", help="also print the rows as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from vidya_lab._validate import check_real
    from vidya_lab.cli import print_json
    from vidya_lab.exercises.grader import grade

    gib = check_real("--memory-limit-gib", args.memory_limit_gib, minimum=0, maximum=1e6)
    subs = grade(args.submissions, args.out, timeout_s=args.timeout, jobs=args.jobs,
                 budget_s=args.notebook_timeout, feedback_dir=args.feedback, seed=args.seed,
                 n_random=args.hidden_cases, cases_file=args.cases, registry=args.registry,
                 chapter=args.chapter, kernel=args.kernel, memory_limit_bytes=int(gib * 2**30),
                 isolation=args.isolation, secret_file=args.secret_file, roster_file=args.roster,
                 progress=None if args.quiet else sys.stderr)
    if args.json:
        print_json([{"file": s.file, "chapter": s.chapter, "student": s.student,
                     "points": {sc.id: sc.points for sc in s.scores},
                     "total": s.total, "max": s.max_points, "status": s.status,
                     "isolation": s.isolation, "killed_processes": s.killed_processes,
                     "flags": s.flags} for s in subs])
    return 0
