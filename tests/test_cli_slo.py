"""`vidya-lab slo`: the JSON contract on good traces, one-line errors (exit 2) on bad ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
