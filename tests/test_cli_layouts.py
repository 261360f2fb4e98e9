"""`vidya-lab layouts`: the issue-5 JSON contract on the command line."""

import json

import pytest

from vidya_lab import layouts, sizing
from vidya_lab.cli import main
from vidya_lab.scenario import TANVI

ARGS = ["layouts", "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--peak-rps", "60",
        "--isl", "3550", "--osl", "350", "--ttft", "2", "--tpot", "0.1"]


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_json_is_the_ranked_search(capsys):
    got = _json(capsys, [*ARGS, "--precision", "fp8", "--json"])
    want = layouts.search_layouts("llama-3.3-70b", "h100-sxm", peak_rps=60, isl=3550, osl=350,
                                  ttft_target_s=2, tpot_target_s=0.1, precision="fp8")
    assert isinstance(got, list) and len(got) == len(want) > 0
    for g, w in zip(got, want, strict=True):
        assert list(g)[:10] == ["tp", "pp", "replicas", "gpus", "fits", "ttft_s", "tpot_s",
                                "max_output_tokens_per_s", "cost_per_hour", "meets_slo"]
        assert g.pop("calibration") == sizing.fitted_calibration().name  # issue 18
        assert g == pytest.approx(w.as_dict())
        assert g["fits"] is True and isinstance(g["meets_slo"], bool)
        assert g["gpus"] == g["tp"] * g["pp"] * g["replicas"]


def test_defaults_are_tanvis_scenario(capsys):
    got = _json(capsys, ["layouts", "--json", "--top", "2"])
    want = layouts.search_layouts(TANVI.model_id, TANVI.candidate_gpu_ids[0],
                                  peak_rps=TANVI.exam_peak_rps, isl=TANVI.prompt_tokens_mean,
                                  osl=TANVI.answer_tokens_mean, ttft_target_s=TANVI.ttft_target_s,
                                  tpot_target_s=TANVI.tpot_target_s)[:2]
    assert len(got) == 2
    for g, w in zip(got, want, strict=True):
        assert g.pop("calibration") == sizing.fitted_calibration().name  # issue 18
        assert g == pytest.approx(w.as_dict())


def test_table_and_links(capsys):
    assert main([*ARGS, "--gpu", "l40s", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "TP" in out and "$/hour" in out and len(out.strip().splitlines()) == 6
    assert out.splitlines()[1] == f"  calibration: {sizing.fitted_calibration().name}"
    slow = _json(capsys, [*ARGS, "--interconnect", "pcie4", "--json"])
    fast = _json(capsys, [*ARGS, "--json"])
    by = {(x["tp"], x["pp"]): x for x in fast}
    for x in slow:
        if x["tp"] > 1 and x["meets_slo"] and by[(x["tp"], x["pp"])]["meets_slo"]:
            # a slower link costs decode time, so the same layout needs at least as many replicas
            assert x["replicas"] >= by[(x["tp"], x["pp"])]["replicas"]


def test_nothing_fits_is_an_empty_answer(capsys):
    argv = ["layouts", "--model", "llama-3.1-405b", "--gpu", "l40s", "--max-gpus-per-replica", "4"]
    assert _json(capsys, [*argv, "--json"]) == []
    assert main(argv) == 0
    assert "no layout fits" in capsys.readouterr().out


@pytest.mark.parametrize("extra, message", [
    (["--gpu", "v100"], "unknown gpu 'v100'"),
    (["--model", "gpt-9"], "unknown model 'gpt-9'"),
    (["--peak-rps", "0"], "peak_rps must be > 0"),
    (["--tpot", "-0.1"], "tpot_target_s must be > 0"),
    (["--utilisation", "2"], "utilisation must be <= 1"),
    (["--interconnect", "nvlink9"], "unknown link 'nvlink9'"),
    (["--top", "0"], "top must be an integer >= 1"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, extra, message):
    assert main(["layouts", *extra, "--json"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
