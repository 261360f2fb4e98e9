"""`vidya-lab slo`: the JSON contract on good traces, one-line errors (exit 2) on bad ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_traces import (
    CASES,
    GENAI,
    LLMPERF,
    LLMPERF_SUMMARY,
    VLLM,
    VLLM_AGG,
    by_hand,
    hand_summary,
)

from vidya_lab import cli

DATA = Path(__file__).parent / "data" / "slo"
PERCENTILE_KEYS = {"p50", "p90", "p95", "p99", "mean"}


def run_json(capsys, *args):
    assert cli.main(["slo", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_on_the_small_trace(capsys):
    out = run_json(capsys, DATA / "small_trace.csv", "--ttft", "0.6")
    assert {"count", "finished", "ttft_s", "tpot_s", "e2e_s", "attainment"} <= set(out)
    assert out["count"] == 4 and out["finished"] == 3
    for key in ("ttft_s", "tpot_s", "e2e_s"):
        assert set(out[key]) == PERCENTILE_KEYS
    assert out["ttft_s"]["p50"] == pytest.approx(0.5)
    assert out["ttft_s"]["p99"] == pytest.approx(0.99)
    assert out["e2e_s"]["p50"] == pytest.approx(1.2)
    assert out["attainment"] == pytest.approx(0.5)  # 2 of 4: the rejected request counts as missed
    both = run_json(capsys, DATA / "small_trace.csv", "--ttft", "0.6", "--tpot", "0.2")
    assert both["attainment"] == pytest.approx(0.25)


def test_no_target_no_attainment_and_minimal_columns(capsys):
    out = run_json(capsys, DATA / "minimal_columns.csv")
    assert "attainment" not in out
    assert out["tpot_s"]["mean"] == pytest.approx((0.25 + 0.5) / 2)  # (1.25-0.25)/4, (2.0-1.0)/2


def test_human_output(capsys):
    assert cli.main(["slo", str(DATA / "small_trace.csv"), "--e2e", "2"]) == 0
    text = capsys.readouterr().out
    assert "TTFT" in text and "SLO attainment" in text and "50.00%" in text
    assert "undefined for 1 one-token" in text


def one_line_error(capsys, path, *extra):
    assert cli.main(["slo", str(path), *extra]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.err


def test_bad_fixture_files(capsys):
    err = one_line_error(capsys, DATA / "first_token_before_arrival.csv")
    assert "row 2 (line 3)" in err and "first_token_s (1.5) is before arrival_s (2.0)" in err
    err = one_line_error(capsys, DATA / "missing_column.csv")
    assert "missing column(s) first_token_s" in err
    err = one_line_error(capsys, DATA / "empty.csv")
    assert "empty file" in err
    err = one_line_error(capsys, DATA / "no_such_file.csv")
    assert "no such file" in err


HEADER = "request_id,arrival_s,first_token_s,finish_s,output_tokens,outcome\n"


@pytest.mark.parametrize("row, message", [
    ("a,0,1,0.5,4,finished", "finish_s (0.5) is before first_token_s (1.0)"),
    ("a,0,1,2,-3,finished", "output_tokens must be >= 0, got -3"),
    ("a,0,1,2,0,finished", "a finished request needs output_tokens >= 1"),
    ("a,0,1,2,2.5,finished", "output_tokens must be a whole number"),
    ("a,zero,1,2,4,finished", "arrival_s is not a number: 'zero'"),
    ("a,0,,2,4,finished", "first_token_s is empty"),
    ("a,0,1,2,4,done", "outcome must be one of finished, rejected, timed_out"),
    ("a,0,1,2", "has 4 fields, the header has 6"),
    ("a,0,1,inf,4,finished", "finish_s must be finite"),
])
def test_bad_rows_name_row_and_problem(tmp_path, capsys, row, message):
    path = tmp_path / "trace.csv"
    path.write_text(HEADER + "ok,0,0.5,1,3,finished\n" + row + "\n")
    err = one_line_error(capsys, path)
    assert "row 2 (line 3)" in err and message in err


def test_header_only_duplicates_and_bad_targets(tmp_path, capsys):
    path = tmp_path / "header_only.csv"
    path.write_text(HEADER)
    assert "no data rows" in one_line_error(capsys, path)
    dup = tmp_path / "dup.csv"
    dup.write_text(HEADER + "x,0,1,2,3,finished\nx,1,2,3,3,finished\n")
    assert "duplicate request_id 'x'" in one_line_error(capsys, dup)
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage\x00")
    assert "not a UTF-8 text file" in one_line_error(capsys, binary)
    assert "is a directory" in one_line_error(capsys, tmp_path)
    with pytest.raises(SystemExit) as exc:
        cli.main(["slo", str(DATA / "small_trace.csv"), "--ttft", "-1"])
    assert exc.value.code == 2


def test_rejected_rows_may_leave_times_empty(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "a,0,0.5,1,3,finished\nb,1,,,,rejected\nc,2,,9,,timed_out\n")
    out = run_json(capsys, path, "--ttft", "1")
    assert out["count"] == 3 and out["finished"] == 1 and out["attainment"] == pytest.approx(1 / 3)


def test_console_entry_point_runs():
    proc = subprocess.run([sys.executable, "-m", "vidya_lab", "slo", str(DATA / "small_trace.csv"),
                           "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout)["count"] == 4


# ----------------------------------------------------------------------------- benchmark outputs

CSV_KEYS = {"count", "finished", "rejected", "timed_out", "ttft_s", "tpot_s", "e2e_s",
            "tpot_undefined"}


@pytest.mark.parametrize("path, fmt", CASES, ids=lambda x: getattr(x, "name", x))
def test_each_format_keeps_the_contract_and_matches_the_hand_computation(capsys, path, fmt):
    out = run_json(capsys, path, "--ttft", "0.3")
    assert CSV_KEYS | {"attainment", "source_format", "conversions"} <= set(out)
    assert out["source_format"] == fmt and out["conversions"]
    assert all(isinstance(c, str) and c for c in out["conversions"])
    hand = by_hand(path, fmt)
    for key, values in (("ttft_s", hand["ttft"]), ("tpot_s", hand["tpot"]), ("e2e_s", hand["e2e"])):
        assert set(out[key]) == PERCENTILE_KEYS
        assert out[key] == pytest.approx(hand_summary(values), abs=1e-9), key
    assert out["attainment"] == pytest.approx(
        sum(1 for v in hand["ttft"] if v <= 0.3) / out["count"])  # failures count as missed
    explicit = run_json(capsys, path, "--format", fmt, "--ttft", "0.3")
    assert explicit == out


def test_vllm_human_output_names_conversions_and_itl(capsys):
    assert cli.main(["slo", str(VLLM)]) == 0
    text = capsys.readouterr().out
    assert "(vllm): 6 requests, 5 finished, 1 rejected" in text
    assert "ITL" in text and "conversion: TPOT = (finish - first token)" in text
    assert cli.main(["slo", str(LLMPERF)]) == 0
    text = capsys.readouterr().out
    assert "ITL" in text and "not in this file" in text
    assert "assumption: the file records no send" in text


def test_csv_output_gains_only_the_new_keys(capsys):
    out = run_json(capsys, DATA / "small_trace.csv")
    assert out["source_format"] == "csv" and out["conversions"] == []
    assert out["itl_s"] is None and out["arrivals_known"] is True


@pytest.mark.parametrize("args, message", [
    ((VLLM_AGG,), "holds aggregates only (no per-request ttfts, itls, output_lens): re-run "
                  "`vllm bench serve` with --save-result --save-detailed"),
    ((LLMPERF_SUMMARY,), "LLMPerf's summary (aggregates only)"),
    ((GENAI, "--format", "vllm"), "not a vLLM benchmark result: missing ttfts"),
    ((VLLM, "--format", "genai-perf"), "not a GenAI-Perf profile export: missing experiments"),
    ((DATA / "small_trace.csv", "--format", "llmperf"), "not LLMPerf individual responses"),
    ((VLLM, "--experiment", "0"), "experiment is only for GenAI-Perf exports"),
])
def test_bad_benchmark_files_exit_2_naming_file_and_what_is_missing(capsys, args, message):
    err = one_line_error(capsys, *args[:1], *args[1:])
    assert message in err and str(args[0]) in err


def test_truncated_multi_experiment_and_oversized_files(tmp_path, capsys, monkeypatch):
    cut = tmp_path / "cut.json"
    cut.write_text(VLLM.read_text()[:700])
    assert "cut.json: truncated JSON" in one_line_error(capsys, cut)
    doc = json.loads(GENAI.read_text())
    doc["experiments"].append(doc["experiments"][0])
    two = tmp_path / "two.json"
    two.write_text(json.dumps(doc))
    assert "choose one with --experiment N" in one_line_error(capsys, two)
    assert run_json(capsys, two, "--experiment", "1")["count"] == 6
    from vidya_lab.traces import _load

    monkeypatch.setattr(_load, "MAX_TRACE_BYTES", 512)
    assert "the limit is 512" in one_line_error(capsys, VLLM)
    assert run_json(capsys, VLLM, "--max-mib", "1")["count"] == 6
    with pytest.raises(SystemExit):
        cli.main(["slo", str(VLLM), "--max-mib", "0"])
    with pytest.raises(SystemExit) as exc:
        cli.main(["slo", str(VLLM), "--format", "vllm-json"])
    assert exc.value.code == 2
