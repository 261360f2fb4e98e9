"""A hostile class, graded for real (issue 15): every case is a notebook built from the released
fixture chapter, as a student would build it (see tests/fixtures/grading/hostile.py).

One grading run with the strongest isolation this machine offers and two notebooks at a time holds
the honest, broken, hostile and careless cases together; the tests check that no row scores above
what its true answers earn, honest rows score exactly what they should, every submission has a row,
no process is left behind and the checkout is unchanged. Runs under ``--isolation process`` check
what holds on one account without a sandbox, including a notebook that kills the grader.
"""

from __future__ import annotations

import csv
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vidya_lab.exercises import grader, procs
from vidya_lab.exercises.givens import draw_givens, read_secret
from vidya_lab.exercises.plan import load_registry
from vidya_lab.exercises.sandbox import probe

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "grading"
sys.path.insert(0, str(FIXTURES))
import hostile as H  # noqa: E402

pytestmark = pytest.mark.slow
LEVEL = probe("auto")[0]
SANDBOXED = LEVEL in ("bubblewrap", "unshare")  # a PID namespace: the grader is out of reach


def _tree_digest(*folders: Path) -> str:
    h = hashlib.sha256()
    for folder in folders:
        for p in sorted(folder.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                h.update(str(p).encode() + p.read_bytes())
    return h.hexdigest()


def _left_behind(*needles: str) -> list[str]:
    out = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            line = procs.cmdline(int(name))
            st = procs._stat(int(name))
            if st and st[1] != "Z" and any(n in line for n in needles):
                out.append(line[:120])
    return out


# ----------------------------------------------------------------------------- the class

def _cases(c: dict, tmp: Path, out_csv: Path) -> dict[str, tuple[object, int | None]]:
    """``{relative path: (notebook or bytes or ("link", target), expected total or None)}``."""
    s = {k: H.read(v[0]) for k, v in c["students"].items()}
    sol = {k: H.read(v[1]) for k, v in c["students"].items()}
    secret = read_secret(c["secret"])
    spec = load_registry("fixture_key").givens_spec(7)
    mine = {k: draw_givens(spec, secret, k, 7) for k in s}
    book = {"n_layers": 80, "n_kv_heads": 8}

    def copied_71(student):  # alice's 7.1 is right for another student only if their numbers match
        return 1 if mine[student] == mine["alice"] else 0

    fx = "import fixture_exercises as fx\n"
    cases = {
        # honest
        "alice/solution.ipynb": (sol["alice"], 4),
        "bob/own_work.ipynb": (H.honest(s["bob"]), 4),
        "carol/blank.ipynb": (s["carol"], 0),
        "dave/partial.ipynb": (H.answer(s["dave"], "7.2", H.RIGHT_72), 1),
        "erin/book_solution.ipynb": (H.read(c["book"][1]), 3 + (mine["erin"] == book)),
        "frank/copied_from_alice.ipynb": (sol["alice"], 3 + copied_71("frank")),
        "zoe/own_work_graded_last.ipynb": (H.honest(s["zoe"]), 4),
        "yves/KEY.IPYNB": (sol["yves"], 4),
        os.fsdecode(b"xena/M\xfcller_01.ipynb"): (H.honest(s["xena"]), 4),
        "walter/" + "x" * 200 + "/" + "y" * 200 + ".ipynb": (H.honest(s["walter"]), 4),
        # in no roster folder: credited to nobody (issue 31), so 7.1 (victor's own numbers) is 0
        "=HYPERLINK(\"x\").ipynb": (H.honest(s["victor"]), 3),
        # not notebooks, links
        "trent/no_nbformat.ipynb": (H.no_nbformat(), 0),
        "trent/many_cells.ipynb": (H.many_cells(), 0),
        "trent/cut_off.ipynb": (b'{"cells": [{"cell_type": "code", "source": "answer_7_1 =', 0),
        "sybil/evil.ipynb": (("link", c["students"]["alice"][1]), 0),
        # broken
        "rupert/loop.ipynb": (H.add(H.honest(s["rupert"]), "while True:\n    pass"), 4),
        "rupert/uninterruptible.ipynb": (H.add(H.honest(s["rupert"]), (
            "import time\nwhile True:\n    try:\n        time.sleep(0.2)\n"
            "    except KeyboardInterrupt:\n        pass"), at=6), 3),
        "peggy/exception.ipynb": (H.add(H.honest(s["peggy"]), "1 / 0", at=3), 4),
        "peggy/kernel_death.ipynb": (H.add(H.honest(s["peggy"]), "import os\nos._exit(1)", at=6), 3),
        "olivia/huge_output.ipynb": (H.add(H.honest(s["olivia"]),
                                           "for _ in range(10):\n    print('x' * 500_000)"), 4),
        "olivia/always_equal.ipynb": (H.function(H.answer(H.answer(H.add(s["olivia"], (
            "class YesFloat(float):\n    def __eq__(self, o):\n        return True\n"
            "    __hash__ = float.__hash__\n"
            "class YesStr(str):\n    def __eq__(self, o):\n        return True\n"
            "    __hash__ = str.__hash__\n    def lower(self):\n        return 'memory'"), at=2),
            "7.1", "answer_7_1 = YesFloat(1.0)"), "7.2", "answer_7_2 = YesStr('x')"),
            "def kv_bytes_per_token(*a):\n    return YesFloat(0.0)"), 0),
        "olivia/monkeypatch.ipynb": (H.function(H.answer(H.answer(H.add(s["olivia"], (
            "import numpy, vidya_lab.exercises as E, vidya_lab.exercises.core as C\n"
            "from vidya_lab.exercises.core import Verdict\n"
            "numpy.isclose = lambda *a, **k: True\n"
            "C.judge = E.judge = lambda *a, **k: Verdict('right', 'patched')\n"
            "C.close = lambda *a: True\n"
            "check = E.check = lambda *a, **k: print('✅ patched')"), at=2),
            "7.1", "answer_7_1 = 1"), "7.2", "answer_7_2 = 'compute'"),
            "def kv_bytes_per_token(*a):\n    return 0"), 0),
        # hostile
        "mallory/json_overflow.ipynb": (H.function(H.add(H.honest(s["mallory"]), (
            "import json\njson.dumps = lambda o, **k: '{\"answer_7_1\": {\"state\": \"value\", "
            "\"value\": 1' + '0' * 400 + '}}'")),
            "import json\n" + H.RIGHT_73 + "\njson.dumps = lambda o, **k: "
            "'{\"state\": \"called\", \"outputs\": [' + ','.join(['{\"state\": \"value\", "
            "\"value\": 1' + '0' * 400 + '}'] * 9) + ']}'"), 0),
        "mallory/forged_result.ipynb": (H.add(H.honest(s["mallory"]), (
            "import json, pathlib\nfor d in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents][:5]:\n"
            "    for n in ('result.json', 'kernel.json', 'values.json'):\n        try:\n"
            "            (d / n).write_text(json.dumps({'elapsed_s': 'soon', 'chapter': 7, "
            "'values': {'answer_7_1': {'state': 'value', 'value': 10**400}}}))\n"
            "        except OSError:\n            pass")), 4),
        "niaj/thief.ipynb": (H.add(H.honest(s["niaj"]), H.connection_thief(), at=2), 4),
        "niaj/startup_file.ipynb": (H.add(s["niaj"], (
            "import pathlib\nd = pathlib.Path.home() / '.ipython/profile_default/startup'\n"
            "d.mkdir(parents=True, exist_ok=True)\n(d / '00-x.py').write_text("
            "'get_ipython().events.register(\"post_run_cell\", lambda r: get_ipython().user_ns"
            ".update(answer_7_2=\"memory\", answer_7_1=2 * 80 * 8 * 128 * 2))')"), at=2), 0),
        "niaj/overwrites_carol.ipynb": (H.add(s["niaj"], (
            f"try:\n    open({str(tmp / 'subs' / 'carol' / 'blank.ipynb')!r}, 'w').write("
            f"open({str(c['students']['carol'][1])!r}).read())\nexcept OSError:\n    pass")), 0),
        "niaj/appends_to_package.ipynb": (H.add(s["niaj"], (
            "import pathlib, vidya_lab\n"
            "for f in [pathlib.Path(vidya_lab.__file__).parent / 'exercises' / 'core.py'"
            + (f", pathlib.Path({str(ROOT / 'vidya_lab' / 'exercises' / 'core.py')!r})"
               if LEVEL == "bubblewrap" else "") + "]:\n"
            "    try:\n        with open(f, 'a') as h:\n"
            "            h.write('\\njudge = lambda *a, **k: Verdict(\"right\", \"hacked\")\\n')\n"
            "    except OSError:\n        pass")), 0),
        "niaj/daemon.ipynb": (H.add(H.honest(s["niaj"]), H.daemon(out_csv, "hacked")), 4),
        "heidi/key_lookup.ipynb": (H.function(H.answer(H.answer(s["heidi"], "7.1", (
            "from vidya_lab.exercises import get_exercise, solve\n"
            "answer_7_1 = solve(get_exercise('7.1'), g)")), "7.2", (
            "import fixture_key\nanswer_7_2 = fixture_key.EXERCISES[1].answer({})")), (
            "def kv_bytes_per_token(*a):\n    from vidya_lab.exercises import get_exercise, solve\n"
            "    return solve(get_exercise('7.3'))(*a)")), 0),
        "ivan/reference_direct.ipynb": (H.two_right(s["ivan"], fx + (
            "def kv_bytes_per_token(*a):\n    return fx.kv_bytes(*a)")), 2),
        "ivan/reference_code_clone.ipynb": (H.two_right(s["ivan"], fx + (
            "import types\n_c = types.FunctionType(fx.kv_bytes.__code__, fx.kv_bytes.__globals__)\n"
            "def kv_bytes_per_token(*a):\n    return _c(*a)")), 2),
        "ivan/reference_swapped.ipynb": (H.two_right(s["ivan"], fx + (
            "_orig = fx.kv_bytes\nfx.kv_bytes = lambda *a: 0\n"
            "def kv_bytes_per_token(*a):\n    return _orig(*a)")), 2),
        "ivan/reference_reloaded.ipynb": (H.two_right(s["ivan"], fx + (
            "import importlib\ndef kv_bytes_per_token(*a):\n"
            "    return importlib.reload(fx).kv_bytes(*a)")), 2),
        "ivan/reference_subprocess.ipynb": (H.two_right(s["ivan"], (
            "import subprocess, sys\ndef kv_bytes_per_token(*a):\n"
            "    out = subprocess.run([sys.executable, '-c', 'import fixture_exercises as f; "
            "print(f.kv_bytes(*' + repr(a) + '))'], capture_output=True, text=True)\n"
            "    return int(out.stdout)")), 2),
        # the kernel is restarted, and loses the numbers its first cell recorded: 7.1 fails
        "judy/memory_in_children.ipynb": (H.add(H.honest(s["judy"]), (
            "import subprocess, sys, time\nps = [subprocess.Popen([sys.executable, '-c', "
            "'import time; b = b\"x\" * (400 * 2**20); time.sleep(60)']) for _ in range(3)]\n"
            "time.sleep(30)"), at=3), 3),
        "judy/stderr_spoof.ipynb": (H.add(H.honest(s["judy"]), (
            "import os, sys\nsys.stderr.write('MemoryError\\n')\nos.write(2, b'MemoryError\\n')\n"
            "for fd in (1, 2):\n    try:\n"
            "        with open(f'/proc/{os.getppid()}/fd/{fd}', 'w') as f:\n"
            "            f.write('VIDYA-RESULT x {\"crash\": \"out of memory\"}\\nMemoryError\\n')\n"
            "    except OSError:\n        pass")), 4),
    }
    if LEVEL == "bubblewrap":  # a copy kept in /tmp survives between kernels without a sandbox
        cases["ivan/reference_stashed.ipynb"] = (H.two_right(H.add(s["ivan"], fx + (
            "import marshal\nopen('/tmp/stash', 'wb').write(marshal.dumps(fx.kv_bytes.__code__))"),
            at=2), "import marshal, types\ndef kv_bytes_per_token(*a):\n"
            "    code = marshal.loads(open('/tmp/stash', 'rb').read())\n"
            "    return types.FunctionType(code, {})(*a)"), 2)
    if SANDBOXED:  # unshare too (issue 31): its kernel sees every folder but its own read-only
        cases["mallory/deletes_folders.ipynb"] = (H.add(H.honest(s["mallory"]), (
            "import pathlib, shutil\nfor d in pathlib.Path.cwd().parents[:3]:\n"
            "    shutil.rmtree(d, ignore_errors=True)"), at=2), None)
    if SANDBOXED:
        cases["mallory/kills_the_grader.ipynb"] = (H.add(H.honest(s["mallory"]), (
            "import os, signal\nfor pid in (os.getppid(), int(open(f'/proc/{os.getppid()}/stat')"
            ".read().rsplit(')', 1)[1].split()[1])):\n"
            "    try:\n        if pid > 1:  # 0 and 1 are not the grader, whatever the sandbox\n"
            "            os.kill(pid, signal.SIGKILL)\n    except (OSError, ValueError):\n"
            "        pass")), 4)
    return cases


def _materialise(cases: dict, subs: Path) -> None:
    for rel, (what, _) in cases.items():
        path = os.path.join(os.fsencode(subs), os.fsencode(rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if isinstance(what, tuple):
            os.symlink(what[1], path)
        elif isinstance(what, bytes):
            open(path, "wb").write(what)
        else:
            H.write(what, Path(os.fsdecode(path)))


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(FIXTURES))
        mp.setenv("PYTHONPATH", os.pathsep.join([str(FIXTURES), str(ROOT)]))  # this checkout's workers
        c = H.release_class(tmp)
        out = tmp / "scores.csv"
        cases = _cases(c, tmp, out)
        _materialise(cases, tmp / "subs")
        (tmp / "subs" / "sybil" / "linkdir").symlink_to(tmp / "sol", target_is_directory=True)
        before = _tree_digest(ROOT / "vidya_lab", FIXTURES)
        log = tmp / "progress.txt"
        t0 = time.monotonic()
        with open(log, "w") as progress:
            grader.grade(tmp / "subs", out, timeout_s=5, jobs=2, budget_s=120, n_random=4,
                         registry="fixture_key", secret_file=c["secret"], roster_file=c["roster"],
                         memory_limit_bytes=2**30, progress=progress)
        elapsed = time.monotonic() - t0
        rows_now = out.read_text()
        time.sleep(6)  # the daemon would have written by now
        after = _tree_digest(ROOT / "vidya_lab", FIXTURES)
    rows = {r["file"]: r for r in csv.DictReader(out.open(newline=""))}
    feedback = {p.name: p.read_text() for p in (tmp / "scores_feedback").iterdir()}
    return dict(tmp=tmp, cases=cases, rows=rows, csv_then=rows_now, csv_later=out.read_text(),
                feedback=feedback, before=before, after=after, log=log.read_text(),
                elapsed=elapsed)


def _row(klass, rel):
    from vidya_lab.exercises.classfiles import display_path, safe_cell

    return klass["rows"][safe_cell(display_path(rel))]


def test_every_submission_has_a_row_and_the_csv_is_final(klass):
    assert len(klass["rows"]) == len(klass["cases"])
    assert not any(r["status"].startswith("not graded") for r in klass["rows"].values())
    assert klass["csv_then"] == klass["csv_later"]  # the daemon wrote nothing, afterwards
    assert not any(n.startswith("sybil__linkdir") for n in klass["feedback"])
    assert all(r["isolation"] == LEVEL for r in klass["rows"].values())


def test_no_row_scores_more_than_its_true_answers(klass):
    wrong = {}
    for rel, (_, want) in klass["cases"].items():
        got = int(_row(klass, rel)["total"])
        if want is None:
            if got > 4:
                wrong[rel] = got
        elif got != want:
            wrong[rel] = (got, want, _row(klass, rel)["status"])
    assert not wrong, wrong


def test_statuses_say_what_happened(klass):
    def status(rel):
        return _row(klass, rel)["status"]

    assert status("alice/solution.ipynb") == "ok"
    assert status("rupert/loop.ipynb").startswith("timeout in cell")
    assert "kernel died in cell 7" in status("peggy/kernel_death.ipynb")
    assert "memory limit exceeded in cell 4" in status("judy/memory_in_children.ipynb")
    assert status("judy/stderr_spoof.ipynb") == "ok"
    assert "no nbformat version" in status("trent/no_nbformat.ipynb")
    assert "400,000 cells" in status("trent/many_cells.ipynb")
    assert "not valid JSON" in status("trent/cut_off.ipynb")
    assert status("sybil/evil.ipynb") == "refused: a symbolic link (not followed)"
    assert _row(klass, "frank/copied_from_alice.ipynb")["flags"].startswith(
        "notebook says student alice")
    for rel in ("niaj/thief.ipynb", "niaj/daemon.ipynb"):
        assert int(_row(klass, rel)["killed_processes"]) >= 1, rel
    assert int(_row(klass, "alice/solution.ipynb")["killed_processes"]) == 0


def test_function_exercises_are_graded_without_the_reference(klass):
    for rel in klass["cases"]:
        if rel.startswith("ivan/"):
            assert _row(klass, rel)["7.3"] == "0", rel
    fb = next(v for k, v in klass["feedback"].items() if k.startswith("ivan__reference_direct"))
    assert "switched off" in fb


def test_nothing_is_left_behind_and_the_checkout_is_unchanged(klass):
    assert klass["before"] == klass["after"]
    assert _left_behind(H.MARKER, str(klass["tmp"])) == []
    assert "seed" not in klass["log"].lower()


def test_feedback_is_short_and_names_are_safe(klass):
    assert all(len(n) <= 100 and n.isascii() for n in klass["feedback"])
    huge = next(v for k, v in klass["feedback"].items() if k.startswith("olivia__huge"))
    assert len(huge) < 5000


def test_speed_of_the_hostile_class(klass):
    # not a speed goal (benchmarks/bench_grade.py measures that): a run this size must not hang
    assert klass["elapsed"] < 60 * len(klass["cases"])


# ----------------------------------------------------------------------------- one account, no sandbox

def _cli_grade(tmp: Path, c: dict, subs: Path, *extra: str, timeout: float = 600):
    # a short TMPDIR (socket paths are limited), so the run's kernels carry it in their command lines
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(FIXTURES), str(ROOT)]),
           "TMPDIR": str(c["short_tmp"])}
    return subprocess.run([sys.executable, "-m", "vidya_lab", "grade", str(subs), "--out",
                           str(tmp / "scores.csv"), "--registry", "fixture_key", "--secret-file",
                           str(c["secret"]), "--roster", str(c["roster"]), "--isolation",
                           "process", "--timeout", "5", "--jobs", "1", *extra],
                          capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    import shutil
    import tempfile

    tmp = tmp_path_factory.mktemp("oneaccount")
    short = Path(tempfile.mkdtemp(prefix="vgt-", dir="/tmp"))
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(FIXTURES))
        c = H.release_class(tmp)
    c["short_tmp"] = short
    yield tmp, c
    shutil.rmtree(short, ignore_errors=True)  # a killed grader could not remove its run folder


def test_on_one_account_honest_rows_survive_a_hostile_neighbour(released):
    tmp, c = released
    s = {k: H.read(v[0]) for k, v in c["students"].items()}
    cases = {
        "alice/solution.ipynb": (H.read(c["students"]["alice"][1]), 4),
        "bob/deletes_the_run.ipynb": (H.add(H.honest(s["bob"]), (
            "import pathlib, shutil\nshutil.rmtree(pathlib.Path.cwd().parents[2], "
            "ignore_errors=True)"), at=2), None),
        "carol/appends_to_its_package.ipynb": (H.add(s["carol"], (
            "import pathlib, vidya_lab\np = pathlib.Path(vidya_lab.__file__).parent / 'exercises' "
            "/ 'registry.py'\np.chmod(0o644)\nwith open(p, 'a') as h:\n"
            "    h.write('\\nraise SystemExit(\"hacked\")\\n')")), 0),
        "dave/startup_file.ipynb": (H.add(s["dave"], (
            "import pathlib\nd = pathlib.Path.home() / '.ipython/profile_default/startup'\n"
            "d.mkdir(parents=True, exist_ok=True)\n(d / '00-x.py').write_text("
            "'get_ipython().events.register(\"post_run_cell\", lambda r: get_ipython().user_ns"
            ".update(answer_7_2=\"memory\"))')"), at=2), 0),
        "grace/blank_after_the_startup_file.ipynb": (s["grace"], 0),
        "heidi/overwrites_zoe.ipynb": (H.add(s["heidi"], (
            f"open({str(tmp / 'subs' / 'zoe' / 'own_work.ipynb')!r}, 'w').write('{{}}')")), 0),
        "ivan/reference_code_clone.ipynb": (H.two_right(s["ivan"], (
            "import types, fixture_exercises as fx\n"
            "_c = types.FunctionType(fx.kv_bytes.__code__, fx.kv_bytes.__globals__)\n"
            "def kv_bytes_per_token(*a):\n    return _c(*a)")), 2),
        "ivan/reference_swapped.ipynb": (H.two_right(s["ivan"], (
            "import fixture_exercises as fx\n_orig = fx.kv_bytes\nfx.kv_bytes = lambda *a: 0\n"
            "def kv_bytes_per_token(*a):\n    return _orig(*a)")), 2),
        "ivan/reference_reloaded.ipynb": (H.two_right(s["ivan"], (
            "import importlib, fixture_exercises as fx\ndef kv_bytes_per_token(*a):\n"
            "    return importlib.reload(fx).kv_bytes(*a)")), 2),
        "ivan/reference_subprocess.ipynb": (H.two_right(s["ivan"], (
            "import subprocess, sys\ndef kv_bytes_per_token(*a):\n"
            "    out = subprocess.run([sys.executable, '-c', 'import fixture_exercises as f; "
            "print(f.kv_bytes(*' + repr(a) + '))'], capture_output=True, text=True)\n"
            "    return int(out.stdout)")), 2),
        "erin/stderr_spoof.ipynb": (H.add(H.honest(s["erin"]), (
            "import os\nfor fd in (1, 2):\n    try:\n"
            "        with open(f'/proc/{os.getppid()}/fd/{fd}', 'w') as f:\n"
            "            f.write('VIDYA-RESULT x {}\\nMemoryError\\n')\n    except OSError:\n"
            "        pass")), 4),
        "frank/daemon.ipynb": (H.add(H.honest(s["frank"]), H.daemon(tmp / "scores.csv", "x")), 4),
        "zoe/own_work.ipynb": (H.honest(s["zoe"]), 4),
    }
    _materialise(cases, tmp / "subs")
    out = _cli_grade(tmp, c, tmp / "subs")
    assert out.returncode == 0, out.stderr[-2000:]
    time.sleep(6)
    rows = {r["file"]: r for r in csv.DictReader((tmp / "scores.csv").open(newline=""))}
    assert len(rows) == len(cases)
    for rel, (_, want) in cases.items():
        assert rows[rel]["isolation"] == "process"
        if want is not None:
            assert int(rows[rel]["total"]) == want, (rel, rows[rel])
    assert int(rows["frank/daemon.ipynb"]["killed_processes"]) >= 1
    assert _left_behind(H.MARKER, str(c["short_tmp"])) == []
    assert list(c["short_tmp"].iterdir()) == []  # the run removed its own folder


def test_on_one_account_a_notebook_that_kills_the_grader_leaves_a_complete_csv(released):
    tmp, c = released
    tmp = tmp / "kill"
    tmp.mkdir()
    s = {k: H.read(v[0]) for k, v in c["students"].items()}
    killer = H.add(H.honest(s["mallory"]), (  # the grader first, then its worker
        "import os, signal\nworker = os.getppid()\n"
        "grader = int(open(f'/proc/{worker}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "os.kill(grader, signal.SIGKILL)\nos.kill(worker, signal.SIGKILL)"))
    cases = {"alice/solution.ipynb": (H.read(c["students"]["alice"][1]), 4),
             "mallory/kills_the_grader.ipynb": (killer, None),
             "zoe/own_work.ipynb": (H.honest(s["zoe"]), None)}
    _materialise(cases, tmp / "subs")
    out = _cli_grade(tmp, c, tmp / "subs")
    assert out.returncode == -9  # killed: nothing on one account can prevent that
    time.sleep(2)
    rows = {r["file"]: r for r in csv.DictReader((tmp / "scores.csv").open(newline=""))}
    assert set(rows) == set(cases)
    assert rows["alice/solution.ipynb"]["total"] == "4"
    assert rows["zoe/own_work.ipynb"]["status"].startswith("not graded")
    assert _left_behind(str(c["short_tmp"])) == []  # the kernel died with its worker
