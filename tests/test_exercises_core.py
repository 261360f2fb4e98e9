"""The inline check: right answers pass, the common wrong ones get the right hint, nothing raises."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vidya_lab.exercises import registry
from vidya_lab.exercises.core import Exercise, Mistake, judge, solve

KV = 327_680  # bytes per token: 2 x 80 layers x 8 KV heads x 128 x 2 bytes (llama-3.1-70b, bf16)

EX = Exercise(
    id="9.1",
    prompt="KV bytes per token",
    answer=lambda g: 2 * 80 * 8 * 128 * 2,
    unit="bytes",
    mistakes=(
        Mistake(lambda g: 2 * 80 * 64 * 128 * 2, "you used the 64 query heads; GQA stores 8 KV heads"),
        Mistake(lambda g: 80 * 8 * 128 * 2, "K and V are both cached: a factor 2 is missing"),
    ),
)


def test_right_answer_passes_within_tolerance():
    assert judge(EX, KV).right
    assert judge(EX, KV * 1.009).right
    assert judge(EX, np.int64(KV)).right
    assert judge(EX, np.float32(KV)).right
    assert not judge(EX, KV * 1.02).right


def test_placeholder_is_not_answered_yet():
    verdict = judge(EX, ...)
    assert verdict.status == "unanswered"
    assert "not answered" in verdict.message


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (2 * 80 * 64 * 128 * 2, "query heads"),
        (80 * 8 * 128 * 2, "factor 2"),
        (KV / 1e3, "1000"),
        (KV * 1e3, "1000"),
        (KV / 1e9, "1e9"),
        (KV * 1e9 / 2**30, "GiB"),
    ],
)
def test_common_mistakes_get_their_hint(answer, fragment):
    verdict = judge(EX, answer)
    assert verdict.status == "wrong"
    assert fragment in verdict.message


class AlwaysEqual:
    def __eq__(self, other):
        return True

    def __float__(self):
        return float(KV)


@pytest.mark.parametrize("answer", [AlwaysEqual(), "327680", [KV], None, True, float("nan"),
                                    float("inf"), {"x": 1}])
def test_non_numbers_are_wrong_not_errors(answer):
    verdict = judge(EX, answer)
    assert verdict.status == "wrong"


@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(),
                 st.none(), st.lists(st.integers())))
def test_judge_never_raises(answer):
    verdict = judge(EX, answer)
    assert verdict.status in {"right", "wrong", "unanswered"}


def test_integer_kind_is_exact():
    ex = Exercise(id="9.2", prompt="", answer=lambda g: 12, kind="integer")
    assert judge(ex, 12).right
    assert not judge(ex, 12.3).right
    assert not judge(ex, 13).right


def test_choice_and_bool_kinds():
    ex = Exercise(id="9.3", prompt="", answer=lambda g: "TP", kind="choice", choices=("TP", "PP"))
    assert judge(ex, " tp ").right
    assert not judge(ex, "PP").right
    assert "one of" in judge(ex, "DP").message
    exb = Exercise(id="9.4", prompt="", answer=lambda g: True, kind="bool")
    assert judge(exb, True).right
    assert not judge(exb, 1).right  # a bool was asked


def test_function_kind_tries_every_case():
    def tpot(first_token_s, finish_s, tokens):
        return (finish_s - first_token_s) / (tokens - 1)

    ex = Exercise(id="9.5", prompt="", reference=tpot, kind="function",
                  cases=((1.0, 3.0, 5), (0.5, 0.5 + 99 * 0.02, 100)), answer_name="my_tpot")
    assert judge(ex, tpot).right
    assert not judge(ex, lambda a, b, n: (b - a) / n).right  # off by one token
    raising = judge(ex, lambda a, b, n: 1 / 0)
    assert raising.status == "wrong" and "ZeroDivisionError" in raising.message
    assert "function" in judge(ex, 3.0).message


def test_a_broken_expected_never_raises():
    ex = Exercise(id="9.6", prompt="", answer=lambda g: 1 / 0)
    verdict = judge(ex, 1.0)
    assert verdict.status == "wrong" and "could not check" in verdict.message


def test_unknown_kind_is_rejected_at_definition():
    with pytest.raises(ValueError, match="kind must be one of"):
        Exercise(id="9.7", prompt="", answer=lambda g: 1, kind="essay")


def test_answer_name_defaults_from_id():
    assert EX.answer_name == "answer_9_1"
    assert EX.chapter == 9


def test_check_prints_and_returns_nothing(monkeypatch, capsys):
    monkeypatch.setattr(registry, "chapter_exercises", lambda ch: [EX] if ch == 9 else [])
    assert registry.check("9.1", KV) is None  # nothing echoed under the feedback in a notebook
    assert "✅" in capsys.readouterr().out
    registry.check("9.1", ...)
    assert "⏳" in capsys.readouterr().out
    registry.check("9.1", 1.0)
    assert "❌" in capsys.readouterr().out
    registry.check("9.99", 1.0)
    out = capsys.readouterr().out
    assert "❌" in out and "unknown exercise" in out and "9.1" in out
    registry.check("nonsense", 1.0)
    assert "❌" in capsys.readouterr().out


#: Exercises each chapter must have at least (the chapter issues), each with this many mistakes.
MIN_EXERCISES = {1: 4, 2: 5, 3: 4, 4: 4, 5: 4, 6: 4}
MIN_MISTAKES = 2


@pytest.mark.parametrize("chapter", sorted(MIN_EXERCISES))
def test_every_chapter_has_its_exercises_numbered_in_order(chapter):
    exercises = registry.chapter_exercises(chapter)
    assert len(exercises) >= MIN_EXERCISES[chapter]
    assert [ex.id for ex in exercises] == [f"{chapter}.{i}" for i in range(1, len(exercises) + 1)]
    assert all(len(ex.mistakes) >= MIN_MISTAKES for ex in exercises
               if ex.kind != "function"), chapter  # a function is judged on cases instead


@pytest.mark.parametrize("ex", registry.all_exercises(), ids=lambda e: e.id)
def test_right_answer_passes_and_every_mistake_gets_its_own_hint(ex):
    value = solve(ex)
    if ex.kind == "function":
        assert callable(value) and ex.cases, ex.id
    elif ex.kind in ("number", "integer"):
        assert math.isfinite(float(value)), ex.id
    assert judge(ex, value).right, ex.id
    for mistake in ex.mistakes:
        verdict = judge(ex, mistake.value(ex.default_givens()))
        assert verdict.status == "wrong", f"{ex.id}: a listed mistake is accepted as right"
        assert verdict.message == mistake.hint, f"{ex.id}: mistake hint shadowed"


def test_exercise_ids_are_unique():
    ids = [ex.id for ex in registry.all_exercises()]
    assert len(ids) == len(set(ids))


def test_a_wrong_choice_a_mistake_names_gets_its_hint():
    ex = Exercise(id="9.8", prompt="", answer=lambda g: "TP", kind="choice",
                  choices=("TP", "PP", "DP"),
                  mistakes=(Mistake(lambda g: "PP", "PP splits the layers, not each matrix"),))
    assert judge(ex, "pp ").message == "PP splits the layers, not each matrix"
    assert judge(ex, "DP").message == ex.hint  # a wrong choice no mistake names
    assert judge(ex, "TP").right


def test_a_plain_float_is_judged_where_numpy_cannot_be_imported():
    """In the browser (JupyterLite without the Pyodide CDN) numpy is absent: a float answer is
    still a number, and the worked solution of exercise 3.2 is accepted (it was refused as "not a
    finite number" when the check tried to import numpy to rule out numpy scalars)."""
    import subprocess
    import sys

    code = ("import sys\nsys.modules['numpy'] = None\nsys.modules['matplotlib'] = None\n"
            "from vidya_lab.exercises.core import as_float\n"
            "from vidya_lab.exercises import check\n"
            "assert as_float(0.25) == 0.25 and as_float(3) == 3.0 and as_float(True) is None\n"
            "from vidya_lab.exercises import ch03 as ex3\n"
            "from vidya_lab import catalog\n"
            "g, model = ex3.my_givens('3.2'), catalog.get_model('llama-3.1-70b')\n"
            "link, n = catalog.get_gpu('l40s').intra_link, g['box_tp']\n"
            "nbytes = g['chunk_tokens'] * model.d_model * 2\n"
            "ring = (link.allreduce_base_s + 2 * (n - 1) * link.allreduce_hop_s\n"
            "        + 2 * (n - 1) / n * nbytes / link.allreduce_bus_bytes_per_s)\n"
            "check('3.2', 2 * model.n_layers * ring)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "✅ exercise 3.2" in out.stdout, out.stdout
