"""``vidya-lab release OUTDIR``: student notebooks without solutions, ready for Binder or an LMS."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "release",
        help="write the student notebooks (.ipynb, solutions removed) into a folder",
        description="Write one .ipynb per chapter with the solution blocks removed and the answer "
                    "placeholders in place, plus requirements.txt/runtime.txt for Binder, "
                    "manifest.json for an LMS and a README for students.",
    )
    p.add_argument("outdir", metavar="OUTDIR", help="folder to write into (created)")
    p.add_argument("--chapters", metavar="DIR",
                   help="folder of NN_*.md chapters (default: the checkout's chapters/)")
    p.add_argument("--solutions", metavar="DIR",
                   help="also write the complete notebooks, with solutions, into DIR "
                        "(for the instructor; must not be inside OUTDIR)")
    p.add_argument("--package", metavar="SPEC",
                   help="requirement line that installs vidya-lab on Binder "
                        "(default: the repository in _config.yml)")
    p.add_argument("--registry", metavar="MODULE",
                   help="a module whose EXERCISES list replaces the package's registry "
                        "(your own exercises; it must be importable where the kernels run)")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from vidya_lab.cli import print_json
    from vidya_lab.exercises.grader import registry_exercises_for
    from vidya_lab.exercises.release import release

    released = release(args.outdir, chapters_dir=args.chapters,
                       exercises_for=registry_exercises_for(args.registry),
                       solutions_dir=args.solutions, package_spec=args.package)
    if args.json:
        print_json([{"chapter": r.chapter, "notebook": str(r.notebook), "title": r.title,
                     "exercises": r.exercise_ids, "problems": r.problems} for r in released])
    else:
        for r in released:
            n = len(r.exercise_ids)
            flag = f"  ({len(r.problems)} problem(s), see above)" if r.problems else ""
            print(f"{r.notebook}  {n} exercise{'s' if n != 1 else ''}{flag}")
    return 1 if any(r.problems for r in released) else 0
