"""``vidya-lab autoscale``: the JSON contract, the derived cold start, and one-line errors."""

from __future__ import annotations

import json

import pytest

from vidya_lab import autoscaling, layouts, sizing
from vidya_lab.cli import main
from vidya_lab.scenario import TANVI

KEYS = ("arrived", "finished", "rejected", "attainment", "ttft_s", "tpot_s", "gpu_hours", "cost",
        "max_replicas", "cold_start_s", "per_hour_attainment")


def run_json(capsys, *args):
    rc = main(["autoscale", *args, "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    return json.loads(out)


def test_json_contract_and_defaults_from_the_scenario(capsys):
    d = run_json(capsys, "--day", "normal", "--dt-s", "30")
    for key in KEYS:
        assert key in d
    assert d["arrived"] == d["finished"] + d["rejected"] + d["in_flight"]
    assert set(d["ttft_s"]) == set(d["tpot_s"]) == {"p50", "p90", "p95", "p99", "mean"}
    assert len(d["per_hour_attainment"]) == 24
    assert 0.0 <= d["attainment"] <= 1.0
    # defaults: Tanvi's model, the first candidate GPU, the book's tp (chapter 3's cheapest
    # single-node layout), derived start
    assert d["model"] == TANVI.model_id and d["gpu"] == TANVI.candidate_gpu_ids[0]
    assert d["tp"] == layouts.reference_tp(TANVI.model_id, TANVI.candidate_gpu_ids[0]) == 4
    rep = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    assert d["cold_start_s"] == pytest.approx(autoscaling.ColdStart().total_s(rep))
    assert sum(d["cold_start_parts_s"].values()) == pytest.approx(d["cold_start_s"])


def test_cold_start_option_and_policy(capsys):
    d = run_json(capsys, "--day", "normal", "--policy", "scheduled", "--cold-start-s", "0",
                 "--dt-s", "30", "--min", "2", "--max", "6")
    assert d["cold_start_s"] == 0.0 and d["cold_start_parts_s"] is None
    assert d["policy"] == "scheduled" and 2 <= d["max_replicas"] <= 6


def test_text_output(capsys):
    assert main(["autoscale", "--day", "normal", "--dt-s", "30"]) == 0
    out = capsys.readouterr().out
    assert "attainment" in out and "GPU-hours" in out and "cold start" in out


@pytest.mark.parametrize("args, message", [
    (["--cold-start-s", "soon"], "--cold-start-s"),
    (["--cold-start-s", "-5"], "--cold-start-s"),
    (["--gpu", "tpu-v9"], "unknown gpu"),
    (["--min", "5", "--max", "2"], "--min"),
    (["--tp", "3"], "tp"),
    (["--dt-s", "0"], "dt_s"),
])
def test_errors_are_one_line(capsys, args, message):
    rc = main(["autoscale", *args])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1


def test_prefix_cache_option_raises_capacity(capsys):
    cold = run_json(capsys, "--day", "normal", "--dt-s", "30", "--policy", "scheduled")
    warm = run_json(capsys, "--day", "normal", "--dt-s", "30", "--policy", "scheduled",
                    "--cached-prefix-tokens", "3400")
    assert cold["cached_prefix_tokens"] == 0 and warm["cached_prefix_tokens"] == 3400
    assert warm["capacity_rps_per_replica"] > 2 * cold["capacity_rps_per_replica"]
    assert warm["gpu_hours"] < cold["gpu_hours"]
    assert warm["ttft_s"]["p50"] < cold["ttft_s"]["p50"]


@pytest.mark.parametrize("args, message", [
    (["--max", "1000000"], "max_replicas"),
    (["--cached-prefix-tokens", "-1"], "cached_prefix_tokens"),
    (["--cached-prefix-tokens", "999999"], "cached_prefix_tokens"),
])
def test_bounds_are_one_line_errors(capsys, args, message):
    rc = main(["autoscale", "--day", "normal", "--dt-s", "30", *args])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
