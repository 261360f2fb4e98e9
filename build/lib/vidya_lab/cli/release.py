"""``vidya-lab release OUTDIR``: student notebooks without solutions, ready for Binder or an LMS."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "release",
        help="write the student notebooks (.ipynb, solutions removed) into a folder",
        description="Write one .ipynb per chapter with the solution blocks removed and the answer "
                    "placeholders in place, plus requirements.txt/runtime.txt for Binder, "
                    "manifest.json for an LMS and a README for students. With --roster, one "
                    "folder per student, each notebook with that student's own numbers.",
    )
    p.add_argument("outdir", metavar="OUTDIR", help="folder to write into (created)")
    p.add_argument("--chapters", metavar="DIR",
                   help="folder of NN_*.md chapters (default: the checkout's chapters/)")
    p.add_argument("--chapter", metavar="N", type=int, action="append", dest="only",
                   help="release only chapter N (repeat for more; default: every chapter)")
    p.add_argument("--solutions", metavar="DIR",
                   help="also write the complete notebooks, with solutions, into DIR "
                        "(for the instructor; must not be inside OUTDIR)")
    p.add_argument("--roster", metavar="CSV",
                   help="the class list (a CSV with an 'id' column): one folder of notebooks per "
                        "student, each with the student's own numbers (needs --secret-file)")
    p.add_argument("--secret-file", metavar="FILE",
                   help="the class secret the students' numbers are drawn from; written (owner-"
                        "only) if it does not exist; give the same file to `vidya-lab grade`")
    p.add_argument("--package", metavar="SPEC",
                   help="requirement line that installs vidya-lab on Binder "
                        "(default: the repository in _config.yml)")
    p.add_argument("--registry", metavar="MODULE",
                   help="a module whose EXERCISES list replaces the package's answer key "
                        "(your own exercises)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from vidya_lab.cli import print_json
    from vidya_lab.exercises.plan import registry_exercises_for
    from vidya_lab.exercises.release import release
    from vidya_lab.exercises.roster import read_roster

    exercises_for = registry_exercises_for(args.registry)
    roster = read_roster(args.roster) if args.roster else None
    released = release(args.outdir, chapters_dir=args.chapters, exercises_for=exercises_for,
                       solutions_dir=args.solutions, package_spec=args.package, roster=roster,
                       secret_file=args.secret_file, only=args.only)
    if args.json:
        print_json([{"chapter": r.chapter, "notebook": str(r.notebook), "title": r.title,
                     "exercises": r.exercise_ids, "problems": r.problems} for r in released])
    else:
        for r in released:
            n = len(r.exercise_ids)
            flag = f"  ({len(r.problems)} problem(s), see above)" if r.problems else ""
            where = f"{r.notebook}" if roster is None else f"{r.notebook.name} x {len(roster)} students"
            print(f"{where}  {n} exercise{'s' if n != 1 else ''}{flag}")
    return 1 if any(r.problems for r in released) else 0
