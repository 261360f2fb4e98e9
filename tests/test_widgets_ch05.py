"""Chapter 5 widget: the update callback as a plain function."""

from __future__ import annotations

import numpy as np

from vidya_lab import sizing
from vidya_lab.widgets import ch05


def test_fcfs_view_shows_the_freeze_and_chunking_removes_it():
    fcfs = ch05.compute_view("FCFS, whole prompts", 512, ch05.TANVI.upload_tokens, 0.5)
    chunked = ch05.compute_view("chunked prefill", 512, ch05.TANVI.upload_tokens, 0.5)
    step = sizing.iteration_time_s(ch05.replica(), prefill=[(ch05.TANVI.upload_tokens, 0)])
    assert fcfs["worst_gap_s"].max() >= step
    assert chunked["worst_gap_s"].max() < step / 10
    assert fcfs["report"]["during"]["itl_max_s"] == fcfs["worst_gap_s"].max()
    assert set(fcfs["report"]) == {"before", "during", "after", "upload"}
    rows = ch05.table_rows(fcfs)
    assert rows[0][0] == "phase" and [r[0] for r in rows[1:]] == ["before", "during", "after"]
    assert "<table>" in ch05.table_html(fcfs)


def test_a_bigger_upload_freezes_longer_and_priority_helps_students():
    small = ch05.compute_view("FCFS, whole prompts", 512, 10_000, 0.3)
    big = ch05.compute_view("FCFS, whole prompts", 512, 80_000, 0.3)
    assert big["worst_gap_s"].max() > small["worst_gap_s"].max()
    chunked = ch05.compute_view("chunked prefill", 512, 80_000, 0.5)
    prio = ch05.compute_view("priority, strict", 512, 80_000, 0.5)
    assert prio["report"]["during"]["ttft_s"]["p99"] < chunked["report"]["during"]["ttft_s"]["p99"]
    assert prio["report"]["upload"]["ttft_s"] > chunked["report"]["upload"]["ttft_s"]


def test_draw_and_build():
    view = ch05.compute_view()
    fig = ch05.draw(view)
    assert len(fig.axes) == 1 and "upload" in fig.axes[0].get_title()
    line = fig.axes[0].lines[0]
    assert np.nanmax(line.get_ydata()) == view["worst_gap_s"].max()
    box = ch05.build()
    policy, chunk, upload, load = box.children[:4]
    policy.value = "chunked prefill"   # the observer redraws without error
    chunk.value = 2048
    assert "during" in box.children[-1].value


def test_the_default_budget_is_the_engines_and_partial_prefills_let_students_pass():
    assert ch05.default_chunk() == 8192 == sizing.engine_defaults(ch05.replica().gpu).max_batched_tokens
    assert ch05.compute_view("chunked prefill")["chunk_tokens"] == 8192
    one = ch05.compute_view("chunked prefill", None, ch05.TANVI.upload_tokens, 0.5)
    two = ch05.compute_view("chunked, 2 partial prefills", None, ch05.TANVI.upload_tokens, 0.5)
    # a student who arrives during the upload no longer waits for all of it
    assert two["report"]["during"]["ttft_s"]["p99"] < one["report"]["during"]["ttft_s"]["p99"]
    assert two["report"]["upload"]["ttft_s"] > one["report"]["upload"]["ttft_s"]
