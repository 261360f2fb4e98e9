"""Issue 25 item 8: a fitted parameter at the end of its stated range means the model is missing
something. These tests state the requirement; they are marked as known failures (strict: once a
refit meets them they fail as "passed unexpectedly", and the marker must go)."""

import math

import pytest

from vidya_lab import sizing
from vidya_lab.calibration.fit import GPU_SCALE_RANGE, OWN_SCALE_GPUS
from vidya_lab.sizing.efficiency import _stored

#: How close to either end of its range a fitted parameter may lie, as a share of the range.
EDGE = 0.02


def _at_edges() -> dict:
    params = _stored()["parameters"]
    out = {}
    for name, p in sizing.PARAMETERS.items():
        if not p.fitted:
            continue
        share = (params[name] - p.low) / (p.high - p.low)
        if not EDGE <= share <= 1 - EDGE:
            out[name] = round(share, 4)
    lo, hi = GPU_SCALE_RANGE
    for gpu in OWN_SCALE_GPUS:
        share = (params["gpu_scale"][gpu] - lo) / (hi - lo)
        if not EDGE <= share <= 1 - EDGE:
            out[f"gpu_scale[{gpu}]"] = round(share, 4)
    return out


def test_edge_detector_sees_the_known_edge_values():
    # the detector itself, on the stored fit as it is: layer_overhead_s at the top of 0-80 us,
    # memory_efficiency 0.9956 of achievable, 97.8 % of its 0.80-1.0 range: just outside the 2 %
    # band, so not flagged (measured 2026-12-03)
    edges = _at_edges()
    assert edges.get("layer_overhead_s") == 1.0
    assert "memory_efficiency" not in edges
    share = (_stored()["parameters"]["memory_efficiency"] - 0.80) / 0.20
    assert 0.97 < share < 1 - EDGE


@pytest.mark.xfail(strict=True, reason="issue 25 item 8: layer_overhead_s and memory_efficiency "
                   "fit at the ends of their ranges; the cost model lacks a term (not yet fixed)")
def test_no_fitted_parameter_lies_within_2_percent_of_an_end_of_its_range():
    assert _at_edges() == {}


@pytest.mark.xfail(strict=True, reason="issue 25 item 8: the MI300X factor is exactly e^-1, a "
                   "point of the search's e^(k/2) grid (not yet fixed)")
def test_per_gpu_factors_are_not_points_of_the_coarse_search_grid():
    for gpu in OWN_SCALE_GPUS:
        k = 2 * math.log(_stored()["parameters"]["gpu_scale"][gpu])
        assert abs(k - round(k)) > 1e-6, gpu
