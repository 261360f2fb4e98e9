import pytest

from vidya_lab._validate import check_choice, check_fraction, check_int, check_real


def test_check_int_names_parameter_and_range():
    assert check_int("batch", 3, minimum=1) == 3
    with pytest.raises(ValueError, match=r"batch must be an integer >= 1, got 0"):
        check_int("batch", 0, minimum=1)
    with pytest.raises(ValueError, match=r"tp must be an integer <= 8, got 9"):
        check_int("tp", 9, maximum=8)
    with pytest.raises(TypeError, match="batch must be an integer"):
        check_int("batch", 2.5)
    with pytest.raises(TypeError):
        check_int("batch", True)


def test_check_real_rejects_nan_inf_and_bounds():
    assert check_real("rate", 2) == 2.0
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match="rate must be finite"):
            check_real("rate", bad)
    with pytest.raises(ValueError, match=r"rate must be > 0"):
        check_real("rate", 0.0, minimum=0.0, min_inclusive=False)
    with pytest.raises(TypeError):
        check_real("rate", "3")


def test_check_fraction_and_choice():
    assert check_fraction("f", 0.5) == 0.5
    with pytest.raises(ValueError, match="f must be <= 1"):
        check_fraction("f", 1.5)
    with pytest.raises(ValueError, match="f must be < 1"):
        check_fraction("f", 1.0, allow_one=False)
    assert check_choice("policy", "fcfs", ("fcfs", "chunked")) == "fcfs"
    with pytest.raises(ValueError, match="policy must be one of 'fcfs', 'chunked'; got 'lifo'"):
        check_choice("policy", "lifo", ("fcfs", "chunked"))


def test_huge_integers_are_refused_by_name():
    with pytest.raises(ValueError, match=r"rate must be a finite number .* integer of 401 digits"):
        check_real("rate", 10**400)
    with pytest.raises(ValueError, match=r"n must be an integer <= 10, got an integer of 401 digits"):
        check_int("n", 10**400, maximum=10)


def test_check_bool_is_strict():
    from vidya_lab._validate import check_bool

    assert check_bool("drain", False) is False
    for bad in ("False", 0, 1, None):
        with pytest.raises(TypeError, match="drain must be True or False"):
            check_bool("drain", bad)


def test_check_reals_bounds_and_shapes():
    import numpy as np

    from vidya_lab._validate import check_reals

    assert check_reals("x", [1, 2.5]).tolist() == [1.0, 2.5]
    with pytest.raises(ValueError, match=r"x\[1\] must be finite"):
        check_reals("x", [1.0, float("nan")])
    with pytest.raises(ValueError, match=r"x\[0\] must be a finite number"):
        check_reals("x", [10**400])
    with pytest.raises(ValueError, match="one-dimensional"):
        check_reals("x", [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="at most 3 values"):
        check_reals("x", np.zeros(4), max_length=3)
    with pytest.raises(TypeError, match="sequence of numbers"):
        check_reals("x", "123")
    with pytest.raises(ValueError, match=r"must be >= 0 everywhere; x\[1\] = -1"):
        check_reals("x", [0, -1], minimum=0)


def test_check_instance_and_work():
    from vidya_lab._validate import check_instance, check_work

    assert check_instance("n", 3, int) == 3
    with pytest.raises(TypeError, match="replica must be a Replica, got dict"):
        check_instance("replica", {}, int, "Replica")
    assert check_work("arrivals", 10, 100) == 10
    with pytest.raises(ValueError, match=r"arrivals needs 1e\+09 events; the limit is 1e\+07 \(shorten"):
        check_work("arrivals", 1e9, 1e7, unit="events", hint="shorten the day")


def test_paths_are_checked_before_work(tmp_path):
    from vidya_lab._validate import atomic_write_text, check_output_dir, check_output_file

    for bad in ("", "   "):
        with pytest.raises(ValueError, match="non-empty path"):
            check_output_file("out", bad)
    with pytest.raises(TypeError, match="file descriptor"):
        check_output_file("out", 1)
    with pytest.raises(ValueError, match="is a directory"):
        check_output_file("out", tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        check_output_file("out", tmp_path / "missing" / "x.csv")
    target = tmp_path / "x.json"
    target.write_text("old")
    with pytest.raises(ValueError, match="already exists"):
        check_output_file("out", target, overwrite=False)
    atomic_write_text(check_output_file("out", target), "new")
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["x.json"]
    with pytest.raises(ValueError, match="is a file"):
        check_output_dir("dest", target)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "a").write_text("")
    with pytest.raises(ValueError, match="not empty"):
        check_output_dir("dest", tmp_path / "full", must_be_empty=True)
    assert check_output_dir("dest", tmp_path / "new" / "sub") == tmp_path / "new" / "sub"
