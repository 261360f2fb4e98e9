"""The story's givens: consistent with each other, and impossible ones refused by name."""

from dataclasses import replace

import pytest

from vidya_lab.catalog import get_gpu, get_model
from vidya_lab.scenario import TANVI


def test_givens_name_catalog_entries():
    get_model(TANVI.model_id)
    for gpu in TANVI.candidate_gpu_ids:
        get_gpu(gpu)


def test_derived_givens():
    assert TANVI.exam_peak_rps == TANVI.normal_peak_rps * TANVI.exam_multiplier
    assert TANVI.prompt_tokens_mean == (TANVI.syllabus_prompt_tokens + TANVI.subject_prompt_tokens
                                        + TANVI.question_tokens_mean)
    # lognormal lengths: the median sits below the mean, and the cap above both
    assert TANVI.question_tokens_p50 < TANVI.question_tokens_mean
    assert TANVI.answer_tokens_p50 < TANVI.answer_tokens_mean < TANVI.answer_tokens_max


@pytest.mark.parametrize(("field", "value", "match"), [
    ("attainment_target", 2.0, "attainment_target must be <= 1"),
    ("attainment_target", 0.0, "attainment_target must be > 0"),
    ("tpot_target_s", 0.0, "tpot_target_s must be > 0"),
    ("normal_peak_rps", -1.0, "normal_peak_rps must be > 0"),
    ("rush_hour", 24, "rush_hour must be an integer <= 23"),
    ("syllabus_prompt_tokens", 0, "syllabus_prompt_tokens must be an integer >= 1"),
    ("candidate_gpu_ids", (), "at least one GPU"),
])
def test_impossible_givens_are_refused(field, value, match):
    with pytest.raises(ValueError, match=match):
        replace(TANVI, **{field: value})


def test_the_itl_target_is_the_reading_pace_and_the_year_is_whole():
    from vidya_lab.scenario import DAYS_PER_YEAR, READING_PACE_S
    from vidya_lab.slo import READING_WORDS_PER_MIN, TOKENS_PER_WORD

    assert TANVI.itl_target_s == READING_PACE_S == pytest.approx(
        60 / (READING_WORDS_PER_MIN * TOKENS_PER_WORD))
    assert TANVI.itl_target_s > TANVI.tpot_target_s  # a stall target, not a mean
    assert TANVI.exam_days_per_year + TANVI.normal_days_per_year == DAYS_PER_YEAR
    assert TANVI.isolation == "per-school"  # chapter 4's recommendation


@pytest.mark.parametrize(("field", "value", "match"), [
    ("itl_target_s", 0.0, "itl_target_s must be > 0"),
    ("isolation", "none", "isolation must be one of"),
    ("schools", 0, "schools must be an integer >= 1"),
    ("exam_weeks_per_year", 53, "exam_weeks_per_year must be an integer <= 52"),
])
def test_impossible_new_givens_are_refused(field, value, match):
    with pytest.raises(ValueError, match=match):
        replace(TANVI, **{field: value})
