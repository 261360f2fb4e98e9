"""`vidya-lab cache`: the JSON contract of issue 6, hand-checked values and one-line errors."""

from __future__ import annotations

import json

import pytest

from vidya_lab import caching, sizing
from vidya_lab.cli import main
from vidya_lab.cli.cache import CONTRACT_KEYS


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_and_best_case(capsys):
    got = _json(capsys, ["cache", "--requests", "50", "--shared-prefix", "3000", "--unique", "150",
                         "--json"])
    assert list(got)[: len(CONTRACT_KEYS)] == list(CONTRACT_KEYS)
    assert set(CONTRACT_KEYS) == {"token_hit_rate", "request_hit_rate", "prefill_tokens_saved",
                                  "cache_bytes_used", "ttft_s_p50_without", "ttft_s_p50_with"}
    # the whole KV budget holds everything: 49 of 50 requests reuse 187 blocks of 16 tokens
    assert got["prefill_tokens_saved"] == 49 * 187 * 16
    assert got["token_hit_rate"] == pytest.approx(49 * 2992 / (50 * 3150))
    assert got["token_hit_rate"] == pytest.approx(got["best_case_token_hit_rate"])
    assert got["request_hit_rate"] == pytest.approx(49 / 50)
    assert got["model"] == "llama-3.3-70b" and got["tp"] == 4
    r = caching.default_replica()
    assert got["ttft_s_p50_without"] == pytest.approx(sizing.ttft_s(r, 3150))
    assert got["ttft_s_p50_with"] == pytest.approx(caching.ttft_with_cache_s(r, 3150, 2992))
    assert 0 < got["cache_bytes_used"] <= got["cache_bytes_budget"] == pytest.approx(r.kv_budget_bytes)


def test_same_seed_same_answer_and_cache_bytes_bound(capsys):
    argv = ["cache", "--requests", "40", "--shared-prefix", "500", "--unique", "40", "--cache-bytes",
            "2e7", "--block", "8", "--seed", "3", "--json"]
    a, b = _json(capsys, argv), _json(capsys, argv)
    assert a == b
    assert a["block_tokens"] == 8 and a["cache_bytes_used"] <= 2e7
    zero = _json(capsys, ["cache", "--requests", "20", "--cache-bytes", "0", "--json"])
    assert zero["token_hit_rate"] == 0 and zero["ttft_s_p50_with"] == zero["ttft_s_p50_without"]


def test_text_output_and_other_hardware(capsys):
    assert main(["cache", "--requests", "20", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"]) == 0
    out = capsys.readouterr().out
    assert "token hit rate" in out and "TTFT p50" in out and "1 x h100-sxm" in out


@pytest.mark.parametrize("argv, message", [
    (["--requests", "0"], "n_requests"),
    (["--cache-bytes", "-5"], "cache_bytes"),
    (["--block", "0"], "block_tokens"),
    (["--model", "gpt-9"], "gpt-9"),
    (["--tp", "3"], "tp must divide"),
    (["--requests", "300000"], "--requests"),
    (["--requests", "200001"], "<= 200000"),
    (["--subjects", "10000000"], "subjects must be an integer <= 100000"),
    (["--answer", "10000000"], "the limit is 2e+08"),
    (["--shared-prefix", "-1"], "syllabus_tokens"),
    (["--rate", "nan"], "rate_per_s"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, message):
    assert main(["cache", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
