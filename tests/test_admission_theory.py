"""The simulator, reduced to one slot, against M/M/1 and M/D/1 (chapter 5's first check)."""

from __future__ import annotations

import pytest

from vidya_lab import admission as ad
from vidya_lab import sizing
from vidya_lab.scenario import TANVI

R = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)


@pytest.mark.parametrize("service, theory", [("exponential", 1.0), ("deterministic", 0.5)])
def test_queueing_check_at_half_load(service, theory):
    c = ad.queueing_check(R, 0.5, service, requests=20_000, seed=7)
    assert c["theory_s"] == pytest.approx(theory)          # ρ/(μ − λ) = 1 s; M/D/1 half that
    assert c["z"] < 4 and c["low_s"] < c["mean_wait_s"] < c["high_s"]
    assert c["standard_error_s"] < 0.1 * theory
    assert c["requests"] > 19_000 and c["queue"] == ("M/M/1" if service == "exponential" else "M/D/1")


def test_queueing_check_refuses_bad_input():
    with pytest.raises(ValueError, match="utilisation"):
        ad.queueing_check(R, 1.0, "exponential")
    with pytest.raises(ValueError, match="service"):
        ad.queueing_check(R, 0.5, "gamma")
    with pytest.raises(ValueError, match="requests"):
        ad.queueing_check(R, 0.5, "exponential", requests=10**7)
