"""`vidya-lab estimate`, `models` and `gpus`: the contract of issue 4 on the command line."""

import json
import subprocess
import sys

import pytest

from vidya_lab import catalog, sizing
from vidya_lab.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_estimate_json_is_the_function_dict(capsys):
    argv = ["estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "8", "--tp", "4",
            "--precision", "fp8", "--kv-precision", "fp8", "--isl", "3000", "--osl", "300",
            "--batch", "16", "--json"]
    got = _json(capsys, argv)
    want = sizing.estimate("llama-3.1-70b", "h100-sxm", gpus=8, tp=4, precision="fp8",
                           kv_precision="fp8", isl=3000, osl=300, batch=16)
    assert list(got)[:len(sizing.ESTIMATE_KEYS)] == list(sizing.ESTIMATE_KEYS)
    assert got == pytest.approx(want)
    assert got["kv_bytes_per_token"] == 163_840


def test_estimate_defaults_match_the_contract(capsys):
    got = _json(capsys, ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json"])
    assert got == pytest.approx(sizing.estimate("llama-3.1-8b", "h100-sxm", gpus=1, tp=1, pp=1,
                                                precision="bf16", kv_precision=None, isl=2048,
                                                osl=256, batch=1))


def test_not_fitting_prints_the_answer_and_exits_1(capsys):
    assert main(["estimate", "--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--json"]) == 1
    captured = capsys.readouterr()
    got = json.loads(captured.out)
    assert got["fits"] is False and "exceed" in got["reason"]
    assert "does not fit" in captured.err and captured.err.count("\n") == 1
    assert got["ttft_s"] is None
    # a layout that does not fit prints its estimate, says why on stderr, and exits 1
    assert main(["estimate", "--model", "llama-3.1-405b", "--gpu", "h100-sxm"]) == 1
    out = capsys.readouterr()
    assert "fits               no:" in out.out
    assert out.err.startswith("vidya-lab estimate: failed: llama-3.1-405b does not fit")


@pytest.mark.parametrize("extra, message", [
    (["--model", "llama-9", "--gpu", "h100-sxm"], "unknown model 'llama-9'; known: llama-2-7b"),
    (["--model", "llama-3.1-70b", "--gpu", "v100"], "unknown gpu 'v100'; known:"),
    (["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "3", "--gpus", "3"],
     "tp must divide"),
    (["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--gpus", "6"],
     "gpus must be a multiple of tp x pp = 4, got 6"),
    (["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--precision", "fp2"], "unknown precision"),
    (["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--isl", "0"], "isl must be"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, extra, message):
    assert main(["estimate", *extra, "--json"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_text_output_names_the_numbers(capsys):
    assert main(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--batch", "4"]) == 0
    out = capsys.readouterr().out
    assert "131,072 bytes per token" in out and "TTFT (idle)" in out and "at batch 4" in out


def test_models_and_gpus(capsys):
    models = _json(capsys, ["models", "--json"])
    assert [m["id"] for m in models] == list(catalog.MODELS)
    gpus = _json(capsys, ["gpus", "--json"])
    assert [g["id"] for g in gpus] == list(catalog.GPUS)
    assert all(g["price_source"] for g in gpus)
    assert main(["models"]) == 0
    table = capsys.readouterr().out
    assert all(mid in table for mid in catalog.MODELS) and "2/8" in table
    assert main(["gpus"]) == 0
    assert "h100-sxm" in capsys.readouterr().out


def test_console_entry_point_exit_status():
    proc = subprocess.run([sys.executable, "-m", "vidya_lab", "estimate", "--model", "nope",
                           "--gpu", "h100-sxm"], capture_output=True, text=True)
    assert proc.returncode == 2 and "unknown model" in proc.stderr


@pytest.mark.parametrize("argv", [
    ["--model", "llama-2-70b", "--gpu", "a100-80gb", "--tp", "2", "--gpus", "2"],
    ["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--precision", "fp8"],
    ["--model", "llama-3.1-70b", "--gpu", "a100-80gb", "--tp", "2", "--gpus", "2",
     "--precision", "fp16"],
])
def test_published_configurations_fit(capsys, argv):
    """Issue 14: layouts TensorRT-LLM publishes measurements for are accepted (memory as reported)."""
    got = _json(capsys, ["estimate", *argv, "--json"])
    assert got["fits"] is True and got["max_concurrent_sequences"] >= 1


def test_huge_numbers_are_one_line_errors(capsys):
    assert main(["estimate", "--model", "llama-3.1-70b", "--gpu", "h100-sxm",
                 "--isl", "1" + "0" * 400]) == 2
    err = capsys.readouterr().err
    assert "isl must be an integer <=" in err and err.count("\n") == 1
