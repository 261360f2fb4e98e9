"""``vidya-lab grade``, the pieces, in this process: honest scores from any report, bounded parsing,
a CSV safe in a spreadsheet, refusals before any work. No kernel is started here; the grading runs
with real kernels and hostile notebooks are in ``test_grader_hostile.py``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from vidya_lab.cli import main
from vidya_lab.exercises import (
    cellgraph,
    kernel_code,
    notebook,
    procs,
    roster,
    sandbox,
    submissions,
)
from vidya_lab.exercises.classfiles import FeedbackNames, csv_text, display_path, safe_cell
from vidya_lab.exercises.hidden import encode_args, grading_cases, load_case_file, perturb
from vidya_lab.exercises.plan import FunctionPlan, load_registry, make_plan
from vidya_lab.exercises.scoring import (
    Submission,
    clean_result,
    score_function,
    score_submission,
    score_value,
)

FIXTURES = Path(__file__).parent / "fixtures" / "grading"
KV_80_8 = 2 * 80 * 8 * 128 * 2  # hand-derived: K and V × 80 layers × 8 KV heads × 128 × 2 bytes


@pytest.fixture()
def fixture_registry(monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    return load_registry("fixture_key")


def _ex(reg, ex_id):
    return next(e for e in reg.exercises if e.id == ex_id)


# ----------------------------------------------------------------------------- scoring

def test_value_scoring_trusts_only_plain_json(fixture_registry):
    ex = _ex(fixture_registry, "7.1")
    g = {"n_layers": 80, "n_kv_heads": 8}
    assert score_value(ex, {"state": "value", "value": KV_80_8}, g).right
    assert score_value(ex, {"state": "value", "value": KV_80_8 // 2}, g).message.startswith(
        "you forgot that K and V")
    # the same number is wrong for a student with other givens
    assert not score_value(ex, {"state": "value", "value": KV_80_8}, {"n_layers": 32,
                                                                      "n_kv_heads": 8}).right
    for enc in ({"state": "value", "value": True}, {"state": "unsupported", "type": "Yes"},
                {"state": "value", "value": [KV_80_8]}, {"state": "value", "value": 10**400},
                {"state": "value", "value": float("inf")}):
        assert score_value(ex, enc, g).status == "wrong", enc
    assert score_value(ex, {"state": "missing"}, g).status == "unanswered"
    assert score_value(ex, {"state": "unanswered"}, g).status == "unanswered"
    assert score_value(ex, "garbage", g).status == "unanswered"
    choice = _ex(fixture_registry, "7.2")
    assert score_value(choice, {"state": "value", "value": " Memory "}).right
    assert not score_value(choice, {"state": "value", "value": "compute"}).right


def _fplan(reg):
    ex = _ex(reg, "7.3")
    pub, hid = [(80, 8, 128, 2), (32, 8, 128, 2)], [(40, 4, 64, 2)]
    return FunctionPlan(ex, pub, hid, [ex.reference(*c) for c in pub + hid])


def _outs(*values):
    return {"state": "called", "outputs": [{"state": "value", "value": v} for v in values]}


def test_function_scoring(fixture_registry):
    fp = _fplan(fixture_registry)
    want = fp.expected
    assert score_function(fp, _outs(*want)).right
    assert score_function(fp, _outs(*[float(w) * 1.001 for w in want])).right  # within rel_tol
    wrong_hidden = score_function(fp, _outs(want[0], want[1], want[2] * 2))
    assert not wrong_hidden.right and "wrong on 1 of 1 grading cases" in wrong_hidden.message
    wrong_public = score_function(fp, _outs(0, want[1], want[2]))
    assert "kv_bytes_per_token(80, 8, 128, 2) gave 0" in wrong_public.message
    assert not score_function(fp, _outs(10**400, 10**400, 10**400)).right  # no OverflowError
    assert score_function(fp, _outs(None, None, None)).status == "unanswered"
    assert score_function(fp, _outs(*want[:2])).status == "wrong"  # a short report
    assert score_function(fp, {"state": "called", "outputs": [
        {"state": "unsupported", "type": "Yes"}] * 3}).status == "wrong"
    assert score_function(fp, {"state": "missing"}).status == "unanswered"
    assert score_function(fp, {"state": "unreadable", "problem": "timeout"}).status == "wrong"
    broken = FunctionPlan(fp.exercise, [], [], [], problem="no usable grading case")
    assert not score_function(broken, _outs()).right  # nothing to test on: no free points


def test_a_forged_or_malformed_report_fails_only_its_own_row(fixture_registry):
    plan = make_plan(fixture_registry, np.random.default_rng(7), 2)
    forged = {"chapter": 7, "elapsed_s": "soon", "events": "many", "errors": [{"cell": "x"}, 5],
              "values": {"answer_7_1": {"state": "value", "value": 10**400},
                         "answer_7_2": {"state": "value", "value": "memory"}},
              "functions": {"7.3": {"state": "called", "outputs": "all right"}},
              "leftovers": -3, "flags": [1, "x" * 500], "student": ["alice"]}
    result = clean_result(forged)
    assert result["elapsed_s"] == 0.0 and result["events"] == [] and result["leftovers"] == 0
    sub = score_submission(plan, "f.ipynb", result, {"n_layers": 80, "n_kv_heads": 8})
    assert [s.points for s in sub.scores] == [0, 1, 0] and sub.status == "ok"
    for junk in (None, [], "text", {"chapter": "7"}, {"crash": 5}):
        row = score_submission(plan, "j.ipynb", clean_result(junk), None)
        assert row.total == 0 and isinstance(row.status, str)


def test_the_spec_sent_to_kernels_holds_no_answer(fixture_registry):
    plan = make_plan(fixture_registry, np.random.default_rng(7), n_random=4)
    text = json.dumps(plan.spec)
    assert str(KV_80_8) not in text and "memory" not in text and "n_layers" not in text
    fx = plan.spec["chapters"]["7"]["functions"][0]
    assert fx["name"] == "kv_bytes_per_token" and len(fx["cases"]) == 3 + 4
    for expected in plan.functions["7.3"].expected:
        assert str(expected) not in text
    assert plan.references == [("fixture_exercises", "kv_bytes")]


# ----------------------------------------------------------------------------- grading cases

def test_perturb_keeps_types_and_ranges():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n, x, s, b, z, neg = perturb((80, 2.5, "bf16", True, 0, -6), rng)
        assert type(n) is int and 40 <= n <= 160
        assert type(x) is float and 1.25 <= x <= 5.0
        assert (s, b, z) == ("bf16", True, 0) and -12 <= neg <= -3


def test_grading_cases_keep_only_what_the_reference_answers():
    def ref(n, k):
        if n > 100:
            raise ValueError("n too large")
        return n * k

    pub, hidden = grading_cases(ref, [(80, 2), (object(), 1)], np.random.default_rng(0), 10)
    assert pub == [(80, 2)]  # the unencodable case is dropped
    assert 1 <= len(hidden) <= 10 and all(c[0] <= 100 for c in hidden)
    again = grading_cases(ref, [(80, 2)], np.random.default_rng(0), 10)[1]
    assert again == hidden
    assert grading_cases(ref, [(80, 2)], np.random.default_rng(1), 10)[1] != hidden


def test_encode_args_and_case_file(tmp_path):
    assert encode_args((1, 2.5, "a", [True, None])) == {"__tuple__": [1, 2.5, "a", [True, None]]}
    with pytest.raises(TypeError, match="grading case argument"):
        encode_args((object(),))
    good = tmp_path / "cases.json"
    good.write_text('{"7.3": [[10, 2, 64, 2]]}')
    assert load_case_file(good) == {"7.3": [(10, 2, 64, 2)]}
    bad = tmp_path / "bad.json"
    bad.write_text('{"7.3": 5}')
    with pytest.raises(ValueError, match="mapping exercise ids"):
        load_case_file(bad)


# ----------------------------------------------------------------------------- kernel-side code

def test_encoder_reports_hostile_objects_by_type_only():
    ns: dict = {}
    exec(kernel_code.kernel_code(kernel_code.VALUES, names=[], path="x").split(  # noqa: S102
        "\ndef _vidya_collect_values")[0], ns)
    enc = ns["_vidya_encode"]

    class YesFloat(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    class Liar:
        @property
        def __class__(self):
            return float

    assert enc(YesFloat(3.0))["state"] == "unsupported"
    assert enc(Liar())["state"] == "unsupported"
    assert enc(np.float64(2.5)) == {"state": "value", "value": 2.5}
    assert enc(np.int32(7)) == {"state": "value", "value": 7}
    assert enc(np.bool_(True)) == {"state": "value", "value": True}
    assert enc(np.array(4.0)) == {"state": "value", "value": 4.0}
    assert enc(np.array([4.0]))["state"] == "unsupported"
    assert enc(...) == {"state": "unanswered"}
    assert enc(10**400)["state"] == "unsupported"
    assert enc("x" * 10_000)["state"] == "unsupported"


# ----------------------------------------------------------------------------- reading notebooks

def _nb(*sources, **meta):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata.update(meta)
    return nb


@pytest.mark.parametrize(("data", "why"), [
    (b"not json {", "not valid JSON"),
    (b'{"cells": [{"cell_type": "code", "source": "x = 1"}], "metadata": {}}', "no nbformat"),
    (b"[1, 2]", "no nbformat"),
    (b'{"nbformat": 9, "cells": []}', "nbformat 9"),
    (b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", '
     b'"source": 5}]}', "without a type or source"),
    (b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "nope", '
     b'"source": "", "metadata": {}}]}', "not a valid notebook"),
    (b"\xff\xfe{}", "not valid JSON"),                  # read leniently, and still not JSON
])
def test_what_is_not_a_notebook_gets_a_reason(data, why):
    with pytest.raises(ValueError, match=why):
        notebook.read_submission(data)


def test_metadata_the_grader_does_not_use_is_not_validated():
    nb = _nb("x = 1")
    nb.metadata["kernelspec"] = {"name": 7, "display_name": ["odd"]}   # issue 31: wrong types
    nb.metadata["vidya_lab"] = {"chapter": 7, "student": "alice"}
    nb.cells[0].metadata["tags"] = "not-a-list"
    nb.cells[0].outputs = [{"output_type": "nonsense"}]
    data = json.dumps(nb).encode()
    with pytest.raises(nbformat.ValidationError):                  # the premise: nbformat refuses
        nbformat.validate(nbformat.reads(data.decode(), as_version=4))
    got, notes = notebook.read_submission_noted(data)
    assert got.cells[0].source == "x = 1" and notes == []
    assert got.metadata == {"vidya_lab": {"chapter": 7, "student": "alice"}}
    assert notebook.student_of(got) == "alice"


def test_non_utf8_bytes_in_a_comment_are_replaced_and_noted():
    data = json.dumps(_nb("x = 1  # M\u00fcller")).encode().replace(b"\\u00fc", b"\xfc")
    assert b"\xfc" in data
    got, notes = notebook.read_submission_noted(data)
    assert got.cells[0].source == "x = 1  # M\ufffdller"
    assert notes == ["not UTF-8: 1 undecodable byte sequence(s) read as \ufffd"]


def test_cell_and_size_limits():
    sys.path.insert(0, str(FIXTURES))
    try:
        from hostile import many_cells
    finally:
        sys.path.remove(str(FIXTURES))
    with pytest.raises(ValueError, match="400,000 cells"):
        notebook.read_submission(many_cells(400_000))
    with pytest.raises(ValueError, match="too large"):
        notebook.read_submission(b" " * (notebook.MAX_NOTEBOOK_BYTES + 1))
    good = nbformat.writes(_nb("x = 1")).encode()
    assert notebook.read_submission(good).cells[0].source == "x = 1"


def test_detect_chapter_student_and_flags():
    chapters = {"2": {"values": [{"id": "2.1", "name": "answer_2_1"}], "functions": []},
                "3": {"values": [{"id": "3.1", "name": "answer_3_1"}], "functions": []}}
    nb = _nb("answer_3_1 = 5")
    assert notebook.detect_chapter(nb, Path("x.ipynb"), chapters) == 3
    assert notebook.detect_chapter(nb, Path("smith_02_how_many.ipynb"), chapters) == 2
    nb.metadata["vidya_lab"] = {"chapter": 2, "student": "alice"}
    assert notebook.detect_chapter(nb, Path("x.ipynb"), chapters) == 2
    assert notebook.student_of(nb) == "alice"
    nb.metadata["vidya_lab"]["student"] = "../../etc"
    assert notebook.student_of(nb) is None
    assert notebook.detect_chapter(_nb(), Path("x.ipynb"), chapters) is None
    flags = notebook.red_flags(_nb("x = 1", "f.__code__", "import os\nos.kill(1, 9)"))
    assert flags == ["rebuilds code objects (cell 2)", "signals or detaches processes (cell 3)"]
    assert notebook.red_flags(_nb("import numpy as np\nanswer = np.mean([1])")) == []


def test_reading_a_notebook_compiles_no_grammar():
    """nbformat validates with jsonschema; from 4.24 on jsonschema also imports rfc3987-syntax where
    it is installed, which compiles a grammar (about 1.3 s) in every chapter kernel that glues a
    number and in every grader worker. The jsonschema pin in requirements.txt keeps that out."""
    import subprocess

    code = ("import sys, nbformat\nnbformat.validate(nbformat.v4.new_notebook())\n"
            "print(sorted(m for m in ('rfc3987_syntax', 'lark') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]", (out.stdout, out.stderr[-500:])


def test_function_cells_are_the_definition_and_what_it_needs():
    sources = ["%matplotlib inline\nimport numpy as np", "K = 3", "big = simulate()",
               "def helper(x):\n    return np.sqrt(x) * K", None,
               "def f(a):\n    return helper(a)\ncheck('9.1', f)", "print(f(2))",
               "from vidya_lab.exercises import check"]
    # what follows the definition in its cell (the check) is not needed to define it
    assert cellgraph.function_cells(sources, "f") == [0, 1, 3, 5]
    assert cellgraph.function_cells(sources, "missing") == [0, 1, 2, 3, 5, 6, 7]
    dynamic = sources[:5] + ["exec('g = 1')", "def f(a):\n    return g"]
    assert 5 in cellgraph.function_cells(dynamic, "f")
    assert cellgraph.function_cells(sources, "f", always={2}) == [0, 1, 2, 3, 5]
    # what comes before the definition in its cell must run, so its needs count
    before = ["def setup():\n    pass", "setup()\ndef f(a):\n    return a", "x = 1"]
    assert cellgraph.function_cells(before, "f") == [0, 1]
    assert cellgraph.function_cells(["def f(a, k=K):\n    return a", "K = 2"], "f") == [0, 1]


# ----------------------------------------------------------------------------- the class's files

def test_csv_cells_are_safe_in_a_spreadsheet_and_any_name_survives():
    for text in ("=HYPERLINK(\"x\")", "+1", "-1+2", "@SUM(A1)", "\tx", "\rx"):
        assert safe_cell(text)[0] not in "=+-@\t\r", text
    assert safe_cell("a\x00b\nc") == "a?b c"
    latin1 = os.fsdecode(b"M\xfcller_01.ipynb")
    assert display_path(latin1) == "M\\xfcller_01.ipynb"
    subs = [Submission(display_path(latin1), None, [], "=cmd|' /C calc'!A0"),
            Submission("=evil.ipynb", None, [], "ok", flags=["-x"])]
    rows = list(csv.reader(io.StringIO(csv_text(subs, {}))))
    assert rows[1][0] == "M\\xfcller_01.ipynb" and rows[1][4].startswith("'=")
    assert rows[2][0] == "'=evil.ipynb" and rows[2][-1] == "'-x"


def test_feedback_names_are_safe_short_and_unique():
    names = FeedbackNames()
    assert names("invalid.ipynb") == "invalid.txt"
    assert names("a/b.ipynb") == "a__b.txt"
    other = names("a__b.ipynb")
    assert other != "a__b.txt" and other.endswith(".txt")
    long = names("x" * 200 + "/" + "y" * 200 + ".ipynb")
    odd = names(os.fsdecode(b"M\xfcller.IPYNB"))
    assert len(long) <= 100 and odd.isascii() and names("=x.ipynb") != "=x.txt"
    assert len({long, odd, other, "invalid.txt"}) == 4


def test_find_submissions_follows_no_link_and_ignores_case(tmp_path):
    subs = tmp_path / "subs"
    (subs / "alice" / ".ipynb_checkpoints").mkdir(parents=True)
    (subs / "alice" / "KEY.IPYNB").write_text("{}")
    (subs / "alice" / ".ipynb_checkpoints" / "x.ipynb").write_text("{}")
    (subs / "notes.txt").write_text("")
    secret = tmp_path / "instructor" / "key.ipynb"
    secret.parent.mkdir()
    secret.write_text("{}")
    (subs / "evil.ipynb").symlink_to(secret)
    (subs / "linked").symlink_to(secret.parent, target_is_directory=True)
    found = submissions.find_submissions(subs)
    assert found.notebooks == [os.path.join("alice", "KEY.IPYNB")]
    assert found.links == ["evil.ipynb"] and found.ignored == ["notes.txt"]
    snap = submissions.snapshot(subs, found.notebooks + found.links, tmp_path / "snap")
    assert "evil.ipynb" in snap.problems  # O_NOFOLLOW: never read through the link
    with pytest.raises(FileNotFoundError):
        submissions.find_submissions(tmp_path / "none")


def test_a_copy_altered_during_the_run_is_caught(tmp_path, monkeypatch):
    monkeypatch.setattr(submissions, "IN_MEMORY_BYTES", 0)
    (tmp_path / "a.ipynb").write_text("{}")
    snap = submissions.snapshot(tmp_path, ["a.ipynb"], tmp_path / "snap")
    assert snap.read("a.ipynb") == b"{}"
    snap.copies["a.ipynb"].write_text('{"x": 1}')
    with pytest.raises(ValueError, match="changed during the run"):
        snap.read("a.ipynb")


def test_roster_and_identity(tmp_path):
    r = tmp_path / "r.csv"
    r.write_text("name,ID\nAlice,alice\nBob,bob\n")
    ids = set(roster.read_roster(r))
    assert ids == {"alice", "bob"}
    assert roster.identify("alice/01.ipynb", "bob", ids) == ("alice", "notebook says student bob")
    assert roster.identify("bob_01_fixture.ipynb", None, ids) == ("bob", "")
    # issue 31: the path decides; metadata and a file-name prefix that disagree are only flagged
    assert roster.identify("x.ipynb", "bob", ids) == (
        None, "in no roster folder: credited to nobody; the notebook says student bob")
    assert roster.identify("loose/x.ipynb", None, ids) == (None, "in no roster folder: "
                                                                 "credited to nobody")
    assert roster.identify("alice/bob_01.ipynb", "bob", ids) == (
        "alice", "file name says student bob; notebook says student bob")
    assert roster.identify("bob/alice/01.ipynb", None, ids) == ("alice", "")   # the nearest
    assert roster.identify("x.ipynb", "eve", ids)[0] is None
    assert roster.identify("x.ipynb", "eve", None) == ("eve", "")
    flags = roster.duplicate_flags({"a.ipynb": "bob", "b.ipynb": "bob", "c.ipynb": "alice"})
    assert set(flags) == {"a.ipynb", "b.ipynb"}
    for bad in ("name\nx\n", "id\n../x\n", "id\nbob\nbob\n"):
        r.write_text(bad)
        with pytest.raises(ValueError):
            roster.read_roster(r)


# ----------------------------------------------------------------------------- the package copies

def test_a_reference_is_stubbed_at_the_source():
    src = ("import math\n\ndef ref(a, b=2):\n    '''doc'''\n    return a * b\n\n"
           "class C:\n    def m(self):\n        return 1\n")
    out = sandbox.stub_function(src, "ref")
    ns: dict = {}
    exec(compile(out, "x", "exec"), ns)  # noqa: S102
    with pytest.raises(RuntimeError, match="switched off"):
        ns["ref"](1)
    assert "a * b" not in out
    out = sandbox.stub_function(src, "C.m")
    assert "return 1" not in out
    assert sandbox.stub_function(src, "absent") is None


def test_templates_lack_the_key_and_the_references(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.syspath_prepend(str(FIXTURES))
    refs = [("fixture_exercises", "kv_bytes"), ("vidya_lab.slo.budgets", "tpot_for_reading_speed")]
    values = sandbox.build_template(tmp_path / "v", key_modules=["fixture_key"], references=refs,
                                    block_references=False)
    functions = sandbox.build_template(tmp_path / "f", key_modules=["fixture_key"],
                                       references=refs, block_references=True)
    code = ("import importlib, sys\n"
            "for m in ('vidya_lab.exercises.key.ch01', 'fixture_key'):\n"
            "    try:\n        importlib.import_module(m)\n        print(m, 'IMPORTED')\n"
            "    except ImportError as e:\n        print(m, 'refused')\n"
            "import fixture_exercises, vidya_lab.slo as s, vidya_lab\n"
            "print(vidya_lab.__file__)\n"
            "for f in (lambda: fixture_exercises.kv_bytes(1, 1, 1, 1), "
            "lambda: s.tpot_for_reading_speed(200.0, 1.0, 1.0)):\n"
            "    try:\n        f()\n        print('works')\n"
            "    except RuntimeError:\n        print('off')\n")
    for tmpl, want in ((values, "works"), (functions, "off")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": f"{tmpl.root}{os.pathsep}{FIXTURES}"},
                             timeout=120, cwd=tmp_path).stdout.split("\n")
        assert out[0].endswith("refused") and out[1].endswith("refused"), out
        assert out[2].startswith(str(tmpl.root)) and out[3:5] == [want, want], out


def test_isolation_levels():
    level, _ = sandbox.probe("auto")
    assert level in sandbox.LEVELS
    assert sandbox.probe("process")[0] == "process"
    with pytest.raises(ValueError, match="--isolation"):
        sandbox.probe("docker")


@pytest.mark.skipif(not procs.HAS_PROC, reason="needs /proc")
def test_kill_tree_finds_a_double_forked_daemon(tmp_path):
    """A worker is a subreaper: a process that forks twice and calls setsid stays in its tree."""
    import subprocess
    import time

    pidfile = tmp_path / "daemon.pid"
    daemon = (f"import os, time\nif os.fork():\n    os._exit(0)\nos.setsid()\n"
              f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n")
    worker = ("from vidya_lab.exercises import procs\nimport subprocess, sys, time\n"
              "procs.set_subreaper(True)\n"
              f"subprocess.Popen([sys.executable, '-c', {daemon!r}]).wait()\ntime.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", worker])
    deadline = time.monotonic() + 30
    while not pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    pid = int(pidfile.read_text())
    assert pid in procs.descendants(parent.pid) and procs.tree_rss_bytes(parent.pid) > 0
    assert procs.kill_tree(parent.pid, include_root=True) >= 1
    parent.wait(timeout=10)
    time.sleep(0.2)
    assert procs._stat(pid) is None or procs._stat(pid)[1] == "Z"


def test_memory_limit_helper_refuses_a_large_allocation():
    import subprocess

    code = ("from vidya_lab.exercises.runner import limit_memory\n"
            "limit_memory(2**30)\nimport numpy\n"
            "try:\n    numpy.ones(2**28)\nexcept MemoryError:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "refused", out.stderr[-500:]


# ----------------------------------------------------------------------------- refused before work

def _refused(capsys, args, fragment):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1, err
    return err


def test_cli_refuses_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "a.ipynb").write_text("{}")
    out = str(tmp_path / "s.csv")
    _refused(capsys, ["grade", str(tmp_path / "none"), "--out", out], "submissions folder not found")
    _refused(capsys, ["grade", str(subs), "--out", str(tmp_path)], "is a directory")
    _refused(capsys, ["grade", str(subs), "--out", str(tmp_path / "no" / "s.csv")], "does not exist")
    (tmp_path / "file").write_text("")
    _refused(capsys, ["grade", str(subs), "--out", out, "--feedback", str(tmp_path / "file")],
             "is a file")
    _refused(capsys, ["grade", str(subs), "--out", out, "--registry", "no_such_module_x"],
             "no module named")
    _refused(capsys, ["grade", str(subs), "--out", out, "--registry", "fixture_exercises"],
             "no EXERCISES list")
    _refused(capsys, ["grade", str(subs), "--out", out, "--jobs", "0"], "--jobs")
    _refused(capsys, ["grade", str(subs), "--out", out, "--kernel", "no-such-kernel"], "--kernel")
    _refused(capsys, ["grade", str(subs), "--out", out, "--secret-file", str(tmp_path / "x")],
             "no such file")
    _refused(capsys, ["release", str(tmp_path / "file")], "is a file")
    _refused(capsys, ["release", str(tmp_path / "r"), "--registry", "no_such_module_x"],
             "no module named")
    _refused(capsys, ["release", str(tmp_path / "r"), "--roster", str(tmp_path / "x")],
             "no such file")
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "r").exists()
    assert not (tmp_path / "s_feedback").exists()



@pytest.mark.slow
@pytest.mark.parametrize("level", ["process", sandbox.probe("auto")[0]])
def test_a_kernel_leaves_no_key_on_disk_or_in_its_command_line(tmp_path, level):
    import asyncio

    from vidya_lab.exercises.kernel import KernelSession

    template = sandbox.build_template(tmp_path / "t", key_modules=[], references=[],
                                      block_references=False)
    dirs = sandbox.KernelDirs(tmp_path / "k")
    import shutil

    shutil.copytree(template.root, dirs.pkg)
    ks = KernelSession(dirs, level=level, originals={k: str(v) for k, v in
                                                     template.originals.items()},
                       python=sys.executable, n_cells=1, timeout_s=30)

    async def run():
        await ks.start()
        try:
            key = ks.client.km.session.key
            assert await ks.execute("import vidya_lab, os\nx = vidya_lab.__file__", 0, 30) == "ok"
            lines = [procs.cmdline(p) for p in [ks.root_pid, *procs.descendants(ks.root_pid)]]
            files = [p for p in tmp_path.rglob("*") if p.is_file() and key in p.read_bytes()]
            return key, lines, files
        finally:
            await ks.stop()

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as ex:  # its own event loop, whatever loop this thread has
        key, lines, files = ex.submit(asyncio.run, run()).result(timeout=300)
    assert len(key) >= 32 and files == []
    assert not any(" -f " in line or ".json" in line for line in lines), lines
    assert ks.leftovers == 0


def test_a_functions_locals_are_not_the_notebooks_names():
    sources = ["tokens_per_s = heavy()", "def heavy():\n    return 1",
               "def f(w, t, h):\n    tokens_per_s = w * t / 60 * h\n    return 1 / tokens_per_s\n"
               "check('1.6', f)", "def g():\n    global G\n    G = 1", "def k(x):\n    return G + x"]
    assert cellgraph.function_cells(sources, "f") == [2]
    assert cellgraph.function_cells(sources, "k") == [3, 4]


def test_a_worker_failing_outside_its_notebook_is_retried_then_a_grader_fault(tmp_path, monkeypatch,
                                                                              fixture_registry):
    """Issue 31: a worker that fails for a reason of the grader's (its folder deleted under it) is
    retried once; failing twice, the row is a flagged grader fault with no points, never 0."""
    from vidya_lab.exercises import classfiles, scoring, workers

    gone = {"crash": "grader worker failed (FileNotFoundError: tmpl-values)"}
    good = {"chapter": 7, "values": {}, "functions": {}}
    pool = workers.Pool.__new__(workers.Pool)
    tries: list[str] = []

    def attempt(outcomes):
        def run(job, name, data):
            tries.append(job)
            return outcomes[len(tries) - 1]
        return run

    monkeypatch.setattr(pool, "_attempt", attempt([gone, good]))
    assert pool.run_one(3, "x.ipynb", b"") is good and tries == ["job3", "job3-retry"]
    tries.clear()
    monkeypatch.setattr(pool, "_attempt", attempt([{"crash": "grading time limit exceeded"}]))
    assert pool.run_one(3, "x.ipynb", b"")["crash"].startswith("grading time") and len(tries) == 1
    tries.clear()
    monkeypatch.setattr(pool, "_attempt", attempt([gone, gone]))
    fault = pool.run_one(3, "x.ipynb", b"")
    assert fault["grader_fault"] is True and len(tries) == 2
    plan = make_plan(fixture_registry, np.random.default_rng(0), 2, {})
    sub = scoring.score_submission(plan, "alice/x.ipynb", scoring.clean_result(fault), None)
    assert sub.grader_fault and sub.flags[0].startswith("grader fault")
    row = next(csv.DictReader(io.StringIO(classfiles.csv_text([sub], {7: ["7.1", "7.2", "7.3"]}))))
    assert row["total"] == "" and row["max"] == "" and "grader fault" in row["flags"]
    assert "not scored" in classfiles.feedback_text(sub)
