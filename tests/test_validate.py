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
