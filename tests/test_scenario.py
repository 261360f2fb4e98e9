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
