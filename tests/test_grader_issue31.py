"""Issue 31's hostile and careless class, graded for real (``--jobs 2``, under each namespace
isolation the machine offers): honest notebooks score full marks beside each hostile one, and no
submission is credited to a student other than its roster folder's.

* a classmate's notebook that deletes the grader's working folders (``vg-*``) while the class is
  graded cannot touch an honest key's score;
* an honest key with a kernelspec field of the wrong type, or a raw Latin-1 byte in a code comment,
  scores full marks (the second flagged);
* a file outside any roster folder whose metadata names a classmate gets its own flagged row,
  credited to nobody; a file-name prefix naming a classmate does not beat the folder it sits in.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from vidya_lab.exercises import grader
from vidya_lab.exercises.sandbox import probe

FIXTURES = Path(__file__).parent / "fixtures" / "grading"
sys.path.insert(0, str(FIXTURES))
import hostile as H  # noqa: E402

sys.path.remove(str(FIXTURES))

#: deletes every grader folder it can find next to its run's, four times over two seconds
DELETER = ("import pathlib, shutil, time\nroot = pathlib.Path.cwd().parents[3]\n"
           "for _ in range(4):\n    for d in [*root.glob('vg-*'), pathlib.Path.cwd().parents[2]]:\n"
           "        shutil.rmtree(d, ignore_errors=True)\n    time.sleep(0.5)")


def _levels() -> list[str]:
    out = []
    for level in ("unshare", "bubblewrap"):
        try:
            probe(level)
        except ValueError:
            continue
        out.append(level)
    return out


def _bytes_with_latin1_comment(nb) -> bytes:
    nb = H.add(nb, "x = 1  # Grüße from M\u00fcller", at=2)
    data = json.dumps(nb).encode()
    assert b"\\u00fc" in data
    return data.replace(b"\\u00fc", b"\xfc", 1)           # one raw Latin-1 byte, not UTF-8


@pytest.fixture(scope="module", params=_levels() or [pytest.param("none", marks=pytest.mark.skip(
    reason="no namespace isolation on this machine"))])
def graded(request, tmp_path_factory):
    level = request.param
    tmp = tmp_path_factory.mktemp(f"issue31-{level}")
    short = Path(tempfile.mkdtemp(prefix="vgt31-", dir="/tmp"))   # the run's vg-* folder lives here
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(FIXTURES))
        # the workers import this checkout's vidya_lab, whatever the environment has installed
        mp.setenv("PYTHONPATH", os.pathsep.join([str(FIXTURES), str(FIXTURES.parents[2])]))
        mp.setattr(tempfile, "tempdir", str(short))
        c = H.release_class(tmp)
        sol = {k: H.read(v[1]) for k, v in c["students"].items()}
        bad_meta = H.read(c["students"]["carol"][1])
        bad_meta.metadata["kernelspec"] = {"name": 7, "display_name": "Python 3", "language": "python"}
        cases = {
            "alice/solution.ipynb": (sol["alice"], 4),
            "bob/deletes_the_run.ipynb": (H.add(H.honest(H.read(c["students"]["bob"][0])), DELETER,
                                                at=2), None),
            "carol/kernelspec_of_the_wrong_type.ipynb": (bad_meta, 4),
            "dave/latin1_comment.ipynb": (_bytes_with_latin1_comment(sol["dave"]), 4),
            "erin/solution.ipynb": (sol["erin"], 4),
            # identity: metadata names frank, the file sits in no roster folder
            "loose/looking_good.ipynb": (sol["frank"], None),
            # a file-name prefix naming heidi, in grace's folder: grace's row, flagged
            "grace/heidi_07_fixture.ipynb": (sol["grace"], 4),
            "zoe/solution.ipynb": (sol["zoe"], 4),
        }
        for rel, (what, _) in cases.items():
            p = tmp / "subs" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(what, bytes):
                p.write_bytes(what)
            else:
                H.write(what, p)
        out = tmp / "scores.csv"
        grader.grade(tmp / "subs", out, timeout_s=10, jobs=2, budget_s=120, n_random=4,
                     registry="fixture_key", secret_file=c["secret"], roster_file=c["roster"],
                     isolation=level, memory_limit_bytes=2**30)
    rows = {r["file"]: r for r in csv.DictReader(out.open(newline=""))}
    left = sorted(p.name for p in short.iterdir())
    shutil.rmtree(short, ignore_errors=True)
    return dict(level=level, cases=cases, rows=rows, left=left)


def test_honest_notebooks_score_full_marks_beside_a_deleter(graded):
    rows = graded["rows"]
    assert len(rows) == len(graded["cases"])
    for rel, (_, want) in graded["cases"].items():
        assert rows[rel]["isolation"] == graded["level"]
        if want is not None:
            assert rows[rel]["total"] == str(want), (rel, rows[rel])
    assert graded["left"] == []                            # the run removed its folder, nothing else


def test_lenient_reading_is_flagged_where_it_replaced_bytes(graded):
    rows = graded["rows"]
    assert "not UTF-8" in rows["dave/latin1_comment.ipynb"]["flags"]
    assert "not UTF-8" not in rows["carol/kernelspec_of_the_wrong_type.ipynb"]["flags"]
    assert "invalid" not in rows["carol/kernelspec_of_the_wrong_type.ipynb"]["status"]


def test_the_roster_folder_decides_who_is_credited(graded):
    rows = graded["rows"]
    loose = rows["loose/looking_good.ipynb"]
    assert loose["student"] == ""                          # credited to nobody ...
    assert "no roster folder" in loose["flags"] and "frank" in loose["flags"]   # ... and flagged
    assert not any(r["student"] == "frank" for r in rows.values())
    pref = rows["grace/heidi_07_fixture.ipynb"]
    assert pref["student"] == "grace" and "heidi" in pref["flags"]
    assert not any(r["student"] == "heidi" for r in rows.values())
    for rel, row in rows.items():                          # every other row: its folder's student
        if rel != "loose/looking_good.ipynb":
            assert row["student"] == rel.split("/")[0], (rel, row)
