"""Per-student numbers: drawn from the class secret and the id, checked against, never looked up."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidya_lab.exercises import (
    Between,
    Pick,
    Seed,
    all_exercises,
    check,
    get_exercise,
    judge,
    solve,
)
from vidya_lab.exercises import givens as G
from vidya_lab.exercises.key import ch01 as key1

SECRET = b"a-class-secret-of-enough-length"
SPEC = G.chapter_spec(key1.EXERCISES)


@pytest.fixture(autouse=True)
def _fresh_state():
    saved = {"student": G._STATE["student"], "chapters": dict(G._STATE["chapters"])}
    yield
    G._STATE.update(saved)


def test_draws_are_deterministic_per_student_and_differ_between_them():
    a1 = G.draw_givens(SPEC, SECRET, "alice", 1)
    assert a1 == G.draw_givens(SPEC, SECRET, "alice", 1)
    b = G.draw_givens(SPEC, SECRET, "bob", 1)
    assert a1 != b
    assert a1 != G.draw_givens(SPEC, b"another-secret-entirely!", "alice", 1)
    # each given on its own: a spec with one more given draws the same values for the others
    more = dict(SPEC, extra=Seed(1))
    assert {k: v for k, v in G.draw_givens(more, SECRET, "alice", 1).items() if k != "extra"} == a1


@given(st.text(alphabet="abcdefghij0123456789", min_size=1, max_size=20))
def test_every_drawn_value_is_one_the_given_allows(student):
    for name, value in G.draw_givens(SPEC, SECRET, student, 1).items():
        assert SPEC[name].allows(value), (name, value)


def test_given_kinds():
    assert Pick(2.0, (1.5, 2.0)).pick(3) == 2.0
    assert Between(238.0, 180.0, 300.0, step=1.0).pick(10**9) in {180.0 + k for k in range(121)}
    assert type(Between(5, 1, 9, step=2).pick(7)) is int
    assert 1 <= Seed(101).pick(2**63) < 2**31
    with pytest.raises(ValueError):
        Pick(1, ())
    with pytest.raises(ValueError):
        Between(1.0, 2.0, 1.0)


@pytest.mark.parametrize("bad", ["", "a/b", "../x", "x" * 65, " alice", "é", 5, None])
def test_student_ids_are_safe_as_file_names(bad):
    with pytest.raises(ValueError):
        G.check_student_id(bad)


@pytest.mark.parametrize("ex", [e for e in all_exercises() if e.givens], ids=lambda e: e.id)
def test_each_student_is_right_for_their_own_numbers_only(ex):
    spec = G.chapter_spec([e for e in all_exercises() if e.chapter == ex.chapter])
    a = G.draw_givens(spec, SECRET, "alice", ex.chapter)
    mine, book = solve(ex, a), solve(ex)
    assert judge(ex, mine, a).right
    assert not judge(ex, book, a).right  # the book's answer
    # a classmate's answer: of five classmates, those whose numbers for this exercise differ from
    # alice's (a small grid can deal two students the same numbers, and then the same answer is
    # right for both), none passes for alice's; at least two must differ, or the grid is too small
    drawn = [G.draw_givens(spec, SECRET, who, ex.chapter)
             for who in ("bob", "carol", "dave", "erin", "frank")]
    mine_resolved = ex.resolve_givens(a)
    classmates = [b for b in drawn if ex.resolve_givens(b) != mine_resolved]
    assert len(classmates) >= 2, f"{ex.id}: {5 - len(classmates)} of 5 classmates share alice's numbers"
    copied_right = [judge(ex, solve(ex, b), a).right for b in classmates]
    assert not any(copied_right), copied_right
    for m in ex.mistakes:  # the hints follow the student's own numbers
        assert judge(ex, m.value(ex.resolve_givens(a)), a).message == m.hint


def test_check_and_the_chapter_helpers_use_the_issued_numbers(capsys):
    from vidya_lab.exercises import ch01

    a = G.draw_givens(SPEC, SECRET, "alice", 1)
    ex = get_exercise("1.1")
    book_trace = ch01.busy_trace()
    G.use_givens("alice", 1, a)
    assert ch01.busy_trace() is not book_trace  # the student's own trace
    check("1.1", solve(ex, a))
    assert "✅" in capsys.readouterr().out
    check("1.1", solve(ex))
    assert "❌" in capsys.readouterr().out
    shown = G.my_givens("1.4")
    out = capsys.readouterr().out
    assert shown == {"words_per_min": a["words_per_min"], "headroom": a["headroom"]}
    assert "your own numbers" in out and "words/min" in out


def test_my_givens_without_an_instructor_shows_the_books_numbers(capsys):
    assert G.my_givens("1.4") == {"words_per_min": 238.0, "headroom": 2.0}
    assert "the book's numbers" in capsys.readouterr().out
    assert G.my_givens("nonsense") == {}


def test_use_givens_refuses_what_is_not_a_number_or_string():
    with pytest.raises(ValueError):
        G.use_givens("alice", 1, {"busy_seed": [1, 2]})
    with pytest.raises(ValueError):
        G.use_givens("alice", 0, {})


def test_a_given_declared_two_ways_in_one_chapter_is_refused():
    from vidya_lab.exercises import Exercise

    e1 = Exercise(id="8.1", prompt="", answer=lambda g: 1, givens={"x": Seed(1)})
    e2 = Exercise(id="8.2", prompt="", answer=lambda g: 1, givens={"x": Seed(2)})
    with pytest.raises(ValueError, match="differs"):
        G.chapter_spec([e1, e2])


def test_secret_file(tmp_path):
    p = tmp_path / "s"
    p.write_text("short")
    with pytest.raises(ValueError, match="at least 16"):
        G.read_secret(p)
    p.write_text(G.new_secret())
    assert len(G.read_secret(p)) == 64
    with pytest.raises(FileNotFoundError):
        G.read_secret(tmp_path / "missing")
