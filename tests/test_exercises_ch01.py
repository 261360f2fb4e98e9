"""Chapter 1 exercises: right answers pass, the common wrong ones get their hint."""

from __future__ import annotations

import numpy as np
import pytest

from vidya_lab import slo
from vidya_lab.exercises import ch01, get_exercise, judge
from vidya_lab.exercises.key import ch01 as key1


def test_answers_computed_by_hand_from_the_traces():
    t = ch01.busy_trace()
    fin = t.outcome == 0
    ttft = t.first_token_s[fin] - t.arrival_s[fin]
    assert judge(get_exercise("1.1"), float(np.percentile(ttft, 99))).right
    r = ch01.example_request()
    assert judge(get_exercise("1.2"), (r.finish_s - r.first_token_s) / (r.output_tokens - 1)).right
    both = np.concatenate([slo.ttft_s(x) for x in ch01.replica_traces()])
    assert judge(get_exercise("1.3"), float(np.percentile(both, 99))).right
    # 238 words/min x 4/3 tokens/word x 2 = 10.58 tokens/s -> 0.0945 s per token
    assert judge(get_exercise("1.4"), 60 / (238 * 4 / 3 * 2)).right
    o = ch01.overloaded_trace()
    met = ((o.outcome == 0) & (o.first_token_s - o.arrival_s <= 2.0)
           & ((o.output_tokens <= 1)
              | ((o.finish_s - o.first_token_s) / np.maximum(o.output_tokens - 1, 1) <= 0.1)))
    assert judge(get_exercise("1.5"), float(met.sum() / len(o))).right


def test_benchmark_length_by_hand_is_padded_for_the_pilots_own_spread():
    g = {"pilot_seed": 5, "rel_half_width": 0.05}
    iv = ch01.pilot_intervals(5)
    plain = 2.0 * (iv.batch_means_half_width / (0.05 * iv.estimate)) ** 2   # a two-hour pilot
    # ten batches: 9 / chi2_{0.10, 9} = 9 / 4.16816 (any chi-square table)
    assert judge(get_exercise("1.9"), plain * 9 / 4.16816, g).right
    unpadded = judge(get_exercise("1.9"), plain, g)
    assert not unpadded.right and "assurance" in unpadded.message


def test_units_and_percent_slips_are_caught():
    assert "1000" in judge(get_exercise("1.2"), key1._tpot_example({"busy_seed": 101}) * 1000).message
    assert "percentage" in judge(get_exercise("1.5"), key1._attainment({"overload_seed": 303}) * 100).message


@pytest.mark.parametrize("factor", [1000, 1 / 1000, 60, 1 / 60, 3600, 1 / 3600])
def test_a_time_off_by_a_unit_factor_is_named_a_unit_slip(factor):
    """ms for s (1000x), min for s (60x), h for s (3600x), either way: the hint says so."""
    tpot_s = key1._tpot_example({"busy_seed": 101})
    verdict = judge(get_exercise("1.2"), tpot_s * factor)
    assert not verdict.right and "unit slip" in verdict.message, verdict.message


def test_the_traces_are_what_the_prose_says():
    busy, quiet = ch01.replica_traces()
    assert len(busy) > len(quiet)
    counts = ch01.overloaded_trace().counts()
    assert counts["rejected"] > 0 and counts["finished"] + counts["rejected"] == counts["count"]
