"""Issue 31: API calls given the wrong kind of argument fail with a clear TypeError/ValueError that
names the parameter (not a KeyError, an AttributeError from hmac or a TypeError from pathlib), and
the saturated throughput of a replica that cannot hold a sequence is an error, not an infinite step."""

from __future__ import annotations

import pytest

from vidya_lab import caching, exercises, sizing
from vidya_lab.exercises import givens as G
from vidya_lab.exercises import roster
from vidya_lab.exercises.key import ch01 as key1

SECRET = b"a-class-secret-of-enough-length"
SPEC = G.chapter_spec(key1.EXERCISES)


@pytest.mark.parametrize("bad", [{}, 2.1, None, ["2.1"]])
def test_get_exercise_names_its_parameter(bad):
    with pytest.raises(TypeError, match="exercise_id must be a string"):
        exercises.get_exercise(bad)


def test_get_exercise_still_finds_and_refuses_ids():
    assert exercises.get_exercise("1.1").id == "1.1"
    with pytest.raises(KeyError, match="unknown exercise"):
        exercises.get_exercise("1.99")


@pytest.mark.parametrize("args, name", [
    (([1, 2], SECRET, "alice", 1), "spec"),
    (({"x": 3}, SECRET, "alice", 1), "spec"),
    ((SPEC, "a string secret", "alice", 1), "secret"),
    ((SPEC, None, "alice", 1), "secret"),
    ((SPEC, b"", "alice", 1), "secret"),
    ((SPEC, SECRET, 42, 1), "student"),
    ((SPEC, SECRET, "alice", "1"), "chapter"),
    ((SPEC, SECRET, "alice", 1.0), "chapter"),
])
def test_draw_givens_wrong_types_are_type_errors_naming_the_parameter(args, name):
    with pytest.raises(TypeError, match=rf"^{name} "):
        G.draw_givens(*args)


@pytest.mark.parametrize("args, name", [
    ((SPEC, SECRET, "no spaces allowed", 1), "student id"),
    ((SPEC, SECRET, "alice", 0), "chapter"),
])
def test_draw_givens_bad_values_are_value_errors(args, name):
    with pytest.raises(ValueError, match=name):
        G.draw_givens(*args)


@pytest.mark.parametrize("args, err, name", [
    (({}, {}), TypeError, "rel"),
    ((None, {"alice"}), TypeError, "rel"),
    (("alice/x.ipynb", {}), TypeError, "roster"),
    (("alice/x.ipynb", ["alice"]), TypeError, "roster"),
    (("alice/x.ipynb", {1}), TypeError, "roster"),
    (("  ", {"alice"}), ValueError, "rel"),
])
def test_student_from_path_names_its_parameter(args, err, name):
    with pytest.raises(err, match=rf"^{name} "):
        roster.student_from_path(*args)


def test_saturated_throughput_of_a_replica_whose_weights_do_not_fit_is_an_error():
    r = sizing.Replica("llama-3.1-70b", "h100-sxm", tp=1)           # 141 GB of bf16 on 80 GB
    assert not r.weights_fit
    with pytest.raises(ValueError, match=r"^r: the weights .* do not fit"):
        caching.saturated_throughput_with_cache(r, 2000, 200)


def test_saturated_throughput_with_a_cache_that_leaves_no_room_is_an_error():
    r = sizing.Replica("llama-3.1-8b", "h100-sxm", tp=1)
    ok = caching.saturated_throughput_with_cache(r, 2000, 200, 1e9, 1000)
    assert ok["batch"] >= 1 and ok["step_s"] < float("inf")
    with pytest.raises(ValueError, match=r"^r: cache_bytes=.* no KV room"):
        caching.saturated_throughput_with_cache(r, 2000, 200, r.kv_budget_bytes, 1000)
