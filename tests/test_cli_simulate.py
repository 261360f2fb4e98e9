"""`vidya-lab simulate`: the JSON contract of issue 7 and one-line errors."""

import json

import numpy as np
import pytest

from vidya_lab import admission as ad
from vidya_lab import sizing
from vidya_lab.cli import main

BASE = ["simulate", "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--tp", "4", "--rate", "1.5",
        "--isl", "2000", "--osl", "100", "--duration", "40"]
CONTRACT = ("arrived", "finished", "rejected", "in_flight", "ttft_s", "tpot_s", "e2e_s", "itl_s",
            "wall_s")


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_and_conservation(capsys):
    got = _json(capsys, BASE + ["--json"])
    assert set(CONTRACT) <= set(got)
    assert got["arrived"] == got["finished"] + got["rejected"] + got["in_flight"]
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert set(got[key]) == {"p50", "p90", "p95", "p99", "mean"}
    assert set(got["itl_s"]) == {"p50", "p99", "max"}
    assert got["itl_s"]["p50"] <= got["itl_s"]["p99"] <= got["itl_s"]["max"]
    assert got["wall_s"] > 0


def test_json_equals_the_library_run(capsys):
    got = _json(capsys, BASE + ["--policy", "fcfs", "--upload-tokens", "30000", "--upload-at",
                                "10", "--seed", "3", "--json"])
    r = sizing.Replica("llama-3.3-70b", "h100-sxm", tp=4)
    w = ad.upload_workload(1.5, 40.0, seed=3, upload_at_s=10.0, upload_tokens=30000,
                           upload_output_tokens=100, prompt_tokens=2000, output_tokens=100)
    want = ad.simulate(r, w, ad.SchedulerConfig(policy="fcfs"), duration_s=40.0,
                       drain=False).summary()
    for key in ("arrived", "finished", "rejected", "in_flight"):
        assert got[key] == want[key]
    assert got["ttft_s"] == pytest.approx(want["ttft_s"])
    assert got["itl_s"] == pytest.approx(want["itl_s"])
    # the freeze: some gap is at least the upload's whole prefill step
    assert got["itl_s"]["max"] >= sizing.iteration_time_s(r, prefill=[(30000, 0)])


def test_queue_cap_and_drain(capsys):
    got = _json(capsys, BASE + ["--rate", "20", "--max-queue", "3", "--drain", "--json"])
    assert got["in_flight"] == 0
    assert got["rejected"] == got["rejected_by_reason"]["queue_full"] > 0
    assert got["arrived"] == got["finished"] + got["rejected"]


def test_text_output(capsys):
    assert main(BASE) == 0
    out = capsys.readouterr().out
    assert "arrived" in out and "itl" in out and "busy" in out


@pytest.mark.parametrize("extra, message", [
    (["--upload-tokens", "1000"], "go together"),
    (["--rate", "-1"], "rate_per_s"),
    (["--chunk", "0"], "chunk_tokens"),
    (["--model", "nope"], "nope"),
])
def test_errors_are_one_line_exit_2(capsys, extra, message):
    assert main(BASE + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_same_seed_same_json(capsys):
    a = _json(capsys, BASE + ["--seed", "9", "--json"])
    b = _json(capsys, BASE + ["--seed", "9", "--json"])
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b
    assert np.isfinite(a["ttft_s"]["p99"])


@pytest.mark.parametrize("extra, message", [
    (["--tp", "1"], "leaves no KV cache memory"),                     # 70B bf16 on one H100
    (["--isl", "5000000"], "a request of 5000000 + 100 tokens needs more KV cache"),
])
def test_a_layout_where_no_request_fits_is_refused_with_exit_2(capsys, extra, message):
    assert main(BASE + extra + ["--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""                                          # no empty result printed
    assert "no request fits" in captured.err and message in captured.err
    assert captured.err.count("\n") == 1


@pytest.mark.parametrize("extra, message", [
    (["--isl", "1" + "0" * 400], "prompt_tokens must be an integer <= 1000000000"),
    (["--rate", "1e6", "--duration", "1e6"], "the limit is 1e+06"),
    (["--policy", "priority", "--partial-prefills", "2"], "policy 'chunked' only"),
    (["--partial-prefills", "2", "--long-partial-prefills", "3"], "max_long_partial_prefills"),
])
def test_bad_sizes_are_one_line_exit_2(capsys, extra, message):
    assert main(BASE + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_partial_prefills_flag_reaches_the_scheduler(capsys):
    args = ["--upload-tokens", "40000", "--upload-at", "5", "--seed", "3", "--json"]
    one = _json(capsys, BASE + args)
    two = _json(capsys, BASE + args + ["--partial-prefills", "2"])
    assert one["arrived"] == two["arrived"]
    # students behind the upload get their first tokens sooner when prompts share the budget
    assert two["ttft_s"]["p99"] < one["ttft_s"]["p99"]
