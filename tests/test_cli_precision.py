"""Issue 31: ``--precision fp4`` is refused (exit 2, one line) where no GPU the command uses has
fp4 units, by estimate, layouts, simulate and plan; a GPU that has them (the B200) is accepted."""

from __future__ import annotations

import pytest

from vidya_lab import catalog
from vidya_lab.cli import main

SIM = ["--rate", "0.5", "--isl", "100", "--osl", "10", "--duration", "5"]


@pytest.mark.parametrize("argv", [
    ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "fp4"],
    ["layouts", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--peak-rps", "1",
     "--precision", "fp4"],
    ["simulate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "fp4", *SIM],
    ["plan", "--gpus", "h100-sxm,a100-80gb", "--precisions", "bf16,fp4", "--no-risks"],
])
def test_fp4_without_fp4_units_is_refused_with_exit_2(capsys, argv):
    assert catalog.get_gpu("h100-sxm").fp4_flops_per_s is None        # the premise
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "fp4" in captured.err and "b200" in captured.err and captured.err.count("\n") == 1


def test_fp4_on_a_gpu_with_fp4_units_is_accepted(capsys):
    assert catalog.get_gpu("b200").fp4_flops_per_s is not None
    assert main(["estimate", "--model", "llama-3.1-8b", "--gpu", "b200", "--precision", "fp4",
                 "--json"]) == 0


def test_plan_skips_fp4_on_gpus_without_it():
    from vidya_lab.plan.candidates import candidates

    got = candidates(gpu_ids=("h100-sxm", "b200"), precisions=("fp4",))
    assert got and {c.gpu for c in got} == {"b200"}
