"""Chapter 3's figures and tables draw the package's numbers, not typed ones."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from vidya_lab import experts, layouts, sizing
from vidya_lab import parallelism as par
from vidya_lab.figures import ch03 as f3
from vidya_lab.scenario import TANVI

CTX = TANVI.prompt_tokens_mean + TANVI.answer_tokens_mean // 2


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def test_schematic_names_each_gpus_layers_heads_and_the_talk():
    fig = f3.split_schematic(TANVI.model_id, ((4, 1), (2, 2)))
    left, right = fig.axes
    boxes = [t.get_text() for t in left.texts if t.get_text().startswith("GPU")]
    assert len(boxes) == 4 and all("layers 1–80" in b and "16 of 64 query heads, 2 KV" in b
                                   for b in boxes)
    assert any("160 a step" in t.get_text() for t in left.texts)  # 2 all-reduces x 80 layers
    texts = [t.get_text() for t in right.texts]
    assert sum("layers 1–40" in t for t in texts) == 2 and sum("layers 41–80" in t for t in texts) == 2
    assert sum("80 a step" in t for t in texts) == 2
    assert any("16,384 B" in t for t in texts)  # one activation of d_model x 2 bytes per token
    gb = par.weight_params_per_gpu(TANVI.model_id, 2, 2) * 2 / 1e9
    assert f"{gb:.1f} GB" in right.get_title()
    # TP1 has no all-reduce bar, PP1 no hand-off
    solo = f3.split_schematic(TANVI.model_id, ((1, 1),))
    assert not any("all-reduce" in t or "hand-off" in t for t in _texts(solo))


def test_pipeline_timeline_is_the_schedule():
    r = sizing.Replica(TANVI.model_id, "h100-sxm", pp=4, precision="fp8")
    fig = f3.pipeline_timeline(r, ((1, 1), (64, None)), CTX)
    lone, full = fig.axes
    for ax, (batch, m) in ((lone, (1, 1)), (full, (64, 4))):
        s = layouts.pipeline_schedule(r, batch, CTX, m)
        assert f"idle {s['idle_fraction']:.0%}" in ax.get_title()
        assert len(ax.patches) == 4 * m + 1  # a bar per stage and micro-batch, and the host
        assert ax.get_xlim()[1] == pytest.approx(s["tpot_s"] * 1e3)
        widths = {round(p.get_width(), 9) for p in ax.patches[1:]}
        assert widths == {round(s["stage_s"] * 1e3, 9)}


def test_cost_vs_tpot_names_each_new_split():
    sweep = layouts.cost_vs_tpot_target(TANVI.model_id, "h100-sxm", [0.03, 0.05, 0.1],
                                        peak_rps=TANVI.exam_peak_rps, isl=TANVI.prompt_tokens_mean,
                                        osl=TANVI.answer_tokens_mean,
                                        ttft_target_s=TANVI.ttft_target_s)
    fig = f3.cost_vs_tpot(sweep, "t")
    splits = [f"TP{r['layout'].tp}×PP{r['layout'].pp}" for r in sweep]
    changes = [s for i, s in enumerate(splits) if i == 0 or s != splits[i - 1]]
    assert _texts(fig) == changes
    line = fig.axes[0].lines[0]
    assert list(line.get_ydata()) == [r["cost_per_hour"] for r in sweep]
    assert fig.axes[0].get_ylim()[0] == 0


def test_practice_figure_bars_are_the_shares():
    r4 = sizing.Replica(TANVI.model_id, "h100-sxm", tp=4)
    fig = f3.practice_figure("mixtral-8x7b", 8, r4, 40_000, 6, 16, 3_900)
    left, right = fig.axes
    assert len(left.lines) == 4  # TP and EP, on NVLink and on InfiniBand
    ep = [experts.moe_exchange("mixtral-8x7b", t, 8)["ep_time_s"] * 1e6 for t in (1, 16, 256, 4096, 65536)]
    assert list(left.lines[1].get_ydata()) == pytest.approx(ep)
    widths = [p.get_width() for p in right.patches]
    assert widths == pytest.approx([100 * experts.long_context_kv(r4, 3_900)["share_of_budget"],
                                    100 * experts.long_context_kv(r4, 40_000)["share_of_budget"],
                                    100 * experts.adapter_budget(r4, 6, 16)["share_of_budget"]])


def test_tables():
    mem = f3.memory_table(TANVI.model_id, "h100-sxm", 3_900)
    assert list(mem["TP"]) == [1, 2, 4, 8, 16] and mem["conversations that fit"].iloc[0] == 0
    r2 = sizing.Replica(TANVI.model_id, "h100-sxm", tp=2)
    assert mem["conversations that fit"].iloc[1] == sizing.max_concurrent_sequences(r2, 3_900) == 4
    steps = f3.tp_step_table(TANVI.model_id, "h100-sxm", 1, CTX)
    parts = steps[["reads (ms)", "all-reduces (ms)", "fixed costs (ms)"]].sum(axis=1)
    assert list(parts) == pytest.approx(list(steps["TPOT (ms)"]))
    assert steps["TP"].iloc[0] == "TP1 (no fit)" and steps["speed-up"].iloc[0] == 1.0
    ranked = layouts.search_layouts("llama-3.1-70b", "h100-sxm", peak_rps=5,
                                    isl=TANVI.prompt_tokens_mean, osl=TANVI.answer_tokens_mean,
                                    ttft_target_s=TANVI.ttft_target_s,
                                    tpot_target_s=TANVI.tpot_target_s)
    t = f3.layout_table(ranked, 3)
    assert len(t) == 3 and len(t.columns) <= 6 and " " not in t["layout"].iloc[0]
    assert f3.label(None) == "-"
    html = f3.styled(t, {"USD/hour": "{:,.0f}"}).to_html()
    assert "padding" in html and ">0<" not in html  # no index column


def test_figures_refuse_nonsense():
    with pytest.raises(ValueError, match="tp must divide"):
        f3.split_schematic(TANVI.model_id, ((3, 1),))
    with pytest.raises(TypeError, match="sizing.Replica"):
        f3.pipeline_timeline("not a replica")
    r = sizing.Replica(TANVI.model_id, "h100-sxm", pp=2)
    with pytest.raises(ValueError, match="microbatches"):
        f3.pipeline_timeline(r, ((8, 4),))
