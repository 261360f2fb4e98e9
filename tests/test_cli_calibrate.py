"""`vidya-lab calibrate` and `--calibration FILE` on every cost-model command (issue 18)."""

from __future__ import annotations

import json

import pytest
from test_calibrate import GPU, MODEL, TRUE, write_runs

from vidya_lab import sizing
from vidya_lab.cli import main

#: A slow engine: lower efficiencies, higher fixed costs (each inside its plausible range).
SLOW = {"compute_efficiency_16bit": 0.35, "memory_efficiency": 0.8, "step_overhead_s": 0.006,
        "sequence_overhead_s": 8e-5}


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # one line, no traceback
    return err


@pytest.fixture(scope="module")
def slow_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "slow.json"
    params = {**sizing.fitted_calibration().parameters(), **SLOW}
    path.write_text(json.dumps({"name": "slow engine (test)", "parameters": params}))
    return path


def test_calibrate_writes_what_it_prints_and_recovers_the_runs(capsys, tmp_path):
    paths = [str(p) for p in write_runs("vllm", tmp_path)]
    out = tmp_path / "mine.json"
    doc = _json(capsys, ["calibrate", *paths, "--model", MODEL, "--gpu", GPU, "--tp", "1",
                         "--out", str(out), "--json"])
    assert doc.pop("out") == str(out)
    assert json.loads(out.read_text()) == doc
    for name in ("compute_efficiency_16bit", "memory_efficiency", "sequence_overhead_s",
                 "request_overhead_s"):
        assert doc["parameters"][name] == pytest.approx(TRUE[name], rel=0.05)
    assert [i["source_format"] for i in doc["inputs"]] == ["vllm"] * 3
    assert main(["calibrate", *paths, "--model", MODEL, "--gpu", GPU, "--tp", "1",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "pinned by data" in text and f"written to {out}" in text
    assert "not pinned: layer_overhead_s" in text and doc["name"] in text
    est = _json(capsys, ["estimate", "--model", MODEL, "--gpu", GPU, "--calibration", str(out),
                         "--json"])
    assert est["calibration"] == doc["name"]
    mine = sizing.Replica(MODEL, GPU, calibration=sizing.load_calibration_file(out))
    assert est["ttft_s"] == pytest.approx(sizing.ttft_s(mine, 2048))


def test_calibrate_refuses_what_constrains_nothing(capsys, tmp_path):
    paths = [str(p) for p in write_runs("llmperf", tmp_path, runs=("short",))]
    err = _error(capsys, ["calibrate", *paths, "--model", MODEL, "--gpu", GPU, "--tp", "1",
                          "--out", str(tmp_path / "x.json")])
    assert "constrain nothing" in err and "short_individual_responses.json" in err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("problem, content, expected", [
    ("truncated", '{"ttfts": [0.1, 0.2', "truncated JSON"),
    ("aggregates", '{"mean_ttft_ms": 10, "completed": 3}', "aggregates only"),
])
def test_calibrate_bad_results_name_the_file(capsys, tmp_path, problem, content, expected):
    path = tmp_path / f"{problem}.json"
    path.write_text(content)
    err = _error(capsys, ["calibrate", str(path), "--model", MODEL, "--gpu", GPU, "--tp", "1",
                          "--out", str(tmp_path / "x.json")])
    assert str(path) in err and expected in err


def test_calibrate_checks_the_output_before_the_work(capsys, tmp_path):
    err = _error(capsys, ["calibrate", "no-such-file.json", "--model", MODEL, "--gpu", GPU,
                          "--tp", "1", "--out", str(tmp_path / "missing" / "x.json")])
    assert "does not exist" in err


COMMANDS = {
    "estimate": ["estimate", "--model", MODEL, "--gpu", GPU],
    "layouts": ["layouts", "--model", MODEL, "--gpu", GPU, "--peak-rps", "5",
                "--max-gpus-per-replica", "2"],
    "simulate": ["simulate", "--model", MODEL, "--gpu", GPU, "--rate", "5", "--isl", "500",
                 "--osl", "100", "--duration", "10"],
    # an ordinary day (a tenth of an exam day's requests): the capacity it reports is the same
    "autoscale": ["autoscale", "--model", MODEL, "--gpu", GPU, "--tp", "1", "--dt-s", "60",
                  "--day", "normal"],
}


def _number(cmd: str, out):
    """One number of each command the calibration must move."""
    return {"estimate": lambda o: o["tpot_s"], "layouts": lambda o: o[0]["tpot_s"],
            "simulate": lambda o: o["tpot_s"]["p50"],
            "autoscale": lambda o: o["capacity_rps_per_replica"]}[cmd](out)


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_every_command_uses_and_names_the_calibration(capsys, slow_file, cmd):
    published = _json(capsys, [*COMMANDS[cmd], "--json"])
    slow = _json(capsys, [*COMMANDS[cmd], "--calibration", str(slow_file), "--json"])
    name = sizing.fitted_calibration().name
    if cmd == "layouts":
        assert {x["calibration"] for x in published} == {name}
        assert {x["calibration"] for x in slow} == {"slow engine (test)"}
    else:
        assert published["calibration"] == name and slow["calibration"] == "slow engine (test)"
    if cmd == "autoscale":  # a slower replica serves fewer requests per second
        assert _number(cmd, slow) < _number(cmd, published)
    else:  # and takes longer per token
        assert _number(cmd, slow) > _number(cmd, published)


@pytest.mark.parametrize("cmd", ["layouts", "simulate", "autoscale"])
def test_text_output_names_the_calibration(capsys, slow_file, cmd):
    assert main([*COMMANDS[cmd], "--calibration", str(slow_file)]) == 0
    assert "  calibration: slow engine (test)" in capsys.readouterr().out


def test_plan_with_a_slower_calibration_rents_more(capsys, slow_file):
    argv = ["plan", "--model", MODEL, "--gpus", GPU, "--precisions", "bf16", "--no-risks",
            "--json"]
    published = _json(capsys, argv)
    slow = _json(capsys, [*argv, "--calibration", str(slow_file)])
    assert slow["calibration"] == "slow engine (test)"
    assert published["calibration"] == sizing.fitted_calibration().name
    assert slow["gpus"] > published["gpus"]
    # at the peak, the cheapest layout the calculator finds costs more with a slower engine (the
    # month's bill also depends on which layout each plan confirms and how it is bought)
    assert slow["candidates"][0]["cost_per_hour"] > published["candidates"][0]["cost_per_hour"]
    assert {c["gpu"] for c in slow["candidates"]} == {GPU}


def _bad_files(folder):
    params = sizing.fitted_calibration().parameters()
    without = {k: x for k, x in params.items() if k != "memory_efficiency"}
    cases = {
        "missing": (None, "no such file"),
        "not JSON": ("{'name': 1}", "not JSON"),
        "truncated": (json.dumps({"name": "x", "parameters": params})[:-20], "not JSON"),
        "no parameters": (json.dumps({"name": "x"}), 'missing the "parameters" object'),
        "missing parameter": (json.dumps({"name": "x", "parameters": without}),
                              "parameters lack memory_efficiency"),
        "unknown parameter": (json.dumps({"name": "x", "parameters": {**params, "warp": 9}}),
                              "unknown calibration parameter(s) ['warp']"),
        "out of range": (json.dumps({"name": "x", "parameters": {**params,
                                                                 "memory_efficiency": 0.5}}),
                         "memory_efficiency = 0.5 is outside its plausible range [0.8, 1]"),
        "not a number": (json.dumps({"name": "x", "parameters": {**params,
                                                                 "step_overhead_s": "1 ms"}}),
                         "step_overhead_s must be a number"),
    }
    out = {}
    for label, (text, expected) in cases.items():
        path = folder / f"{label.replace(' ', '_')}.json"
        if text is not None:
            path.write_text(text)
        out[label] = (path, expected)
    return out


def test_bad_calibration_files_exit_2_naming_the_file_and_the_problem(capsys, tmp_path):
    for label, (path, expected) in _bad_files(tmp_path).items():
        err = _error(capsys, [*COMMANDS["estimate"], "--calibration", str(path)])
        assert str(path) in err and expected in err, label


@pytest.mark.parametrize("cmd", ["layouts", "simulate", "autoscale", "plan"])
def test_every_command_refuses_a_bad_calibration_before_working(capsys, tmp_path, cmd):
    path, expected = _bad_files(tmp_path)["out of range"]
    argv = COMMANDS.get(cmd, ["plan", "--gpus", GPU, "--precisions", "bf16", "--no-risks"])
    err = _error(capsys, [*argv, "--calibration", str(path)])
    assert str(path) in err and expected in err


def _as_saved_without_send_times(path, rate):
    """A vLLM result as an older client saved it: no start_times, latencies or queue_times."""
    doc = json.loads(path.read_text())
    for key in ("start_times", "latencies", "queue_times"):
        doc.pop(key, None)
    doc["request_rate"], doc["max_concurrency"] = rate, None
    path.write_text(json.dumps(doc))


def test_calibrate_fits_a_request_rate_inf_burst_from_its_known_concurrency(capsys, tmp_path):
    # issue 30: a burst at t = 0 is a known concurrency (every request in flight at once)
    paths = write_runs("vllm", tmp_path, runs=("short", "long"))
    for p in paths:
        _as_saved_without_send_times(p, "inf")
    doc = _json(capsys, ["calibrate", *map(str, paths), "--model", MODEL, "--gpu", GPU,
                         "--tp", "1", "--out", str(tmp_path / "burst.json"), "--json"])
    assert all(i["arrivals_known"] for i in doc["inputs"])
    assert all(i["observations"].get("decode_step", 0) > 0 for i in doc["inputs"])
    assert doc["parameters"]["memory_efficiency"] == pytest.approx(TRUE["memory_efficiency"],
                                                                   rel=0.1)
    # the same files at a finite rate with no send times constrain nothing, and say why
    for p in paths:
        _as_saved_without_send_times(p, 4.0)
    err = _error(capsys, ["calibrate", *map(str, paths), "--model", MODEL, "--gpu", GPU,
                          "--tp", "1", "--out", str(tmp_path / "x.json")])
    assert "constrain nothing" in err and "no send times" in err
