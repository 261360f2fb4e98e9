"""Chapter 5 widget: a policy, a chunk size, an upload size and a load → what the students felt.

No math here: the run comes from :func:`vidya_lab.admission.simulate` on
:func:`vidya_lab.admission.upload_workload`, the phases and percentiles from
:func:`vidya_lab.admission.upload_report`, the gap curve from
:func:`vidya_lab.admission.worst_gap_by_time`. :func:`compute_view` (numbers) and :func:`draw` (a
matplotlib figure) are plain functions that tests call without a browser; :func:`build` wires them to
controls. Each setting is simulated once (cached), over a short window so an update stays fast.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.figure import Figure

from vidya_lab import admission, sizing
from vidya_lab.scenario import TANVI

#: Policy choices shown to the reader: label -> (policy, aging_s, max_num_partial_prefills).
POLICY_CHOICES: dict[str, tuple[str, float | None, int]] = {
    "FCFS, whole prompts": ("fcfs", None, 1),
    "chunked prefill": ("chunked", None, 1),
    "chunked, 2 partial prefills": ("chunked", None, 2),
    "priority, strict": ("priority", None, 1),
    "priority + aging (2 s)": ("priority", 2.0, 1),
}
#: Token budgets offered, tokens; the default is the engine's for the GPU (:func:`default_chunk`).
CHUNK_CHOICES = (256, 512, 1024, 2048, 4096, 8192)
UPLOAD_CHOICES = (5_000, 10_000, 20_000, TANVI.upload_tokens, 60_000, 80_000)
LOAD_RANGE = (0.1, 0.9)          # fraction of the replica's saturated request rate
WINDOW_S = 40.0                  # simulated seconds per setting
UPLOAD_AT_S = 10.0
SEED = 5
GPU_ID, TP = "h100-sxm", 4


@lru_cache(maxsize=1)
def replica() -> sizing.Replica:
    """The chapter's replica: the scenario's model on 4 × H100 (TP 4)."""
    return sizing.Replica(TANVI.model_id, GPU_ID, tp=TP)


def default_chunk() -> int:
    """The engine's token budget on the chapter's GPU (vLLM's ``max_num_batched_tokens``)."""
    return replica().max_batched_tokens


@lru_cache(maxsize=1)
def saturation_rate_per_s() -> float:
    """Requests/s the replica sustains for the scenario's mean prompt and answer."""
    return admission.saturation_rate_per_s(replica(), TANVI.prompt_tokens_mean,
                                           TANVI.answer_tokens_mean)


@lru_cache(maxsize=128)
def run(policy_label: str, chunk_tokens: int, upload_tokens: int, load: float
        ) -> admission.SimResult:
    """One simulated window (cached): students at ``load`` × saturation plus one upload."""
    if policy_label not in POLICY_CHOICES:
        raise ValueError(f"policy_label must be one of {list(POLICY_CHOICES)}; got {policy_label!r}")
    policy, aging, partial = POLICY_CHOICES[policy_label]
    w = admission.upload_workload(load * saturation_rate_per_s(), WINDOW_S, seed=SEED,
                                  upload_at_s=UPLOAD_AT_S, upload_tokens=int(upload_tokens))
    cfg = admission.SchedulerConfig(policy=policy, chunk_tokens=int(chunk_tokens), aging_s=aging,
                                    max_num_partial_prefills=partial)
    return admission.simulate(replica(), w, cfg)


def compute_view(policy_label: str = "FCFS, whole prompts", chunk_tokens: int | None = None,
                 upload_tokens: int = TANVI.upload_tokens, load: float = 0.5) -> dict:
    """Everything the widget shows, as numbers (``chunk_tokens`` ``None``: the engine's budget).

    Returns the inputs, ``rate_per_s`` (students' arrival rate), ``emit_s`` and ``worst_gap_s``
    (the longest student inter-token gap ending at each step, seconds), ``report``
    (:func:`vidya_lab.admission.upload_report`: ``before``/``during``/``after`` summaries and the
    upload's own TTFT and end-to-end), ``upload_arrival_s``, ``upload_first_token_s`` (None if it
    got none) and ``tpot_target_s``.
    """
    if chunk_tokens is None:
        chunk_tokens = default_chunk()
    res = run(policy_label, int(chunk_tokens), int(upload_tokens), round(float(load), 3))
    emit, gap = admission.worst_gap_by_time(res)
    report = admission.upload_report(res)
    up = report["upload"]
    first = None if up["ttft_s"] is None else up["arrival_s"] + up["ttft_s"]
    return {"policy_label": policy_label, "chunk_tokens": int(chunk_tokens),
            "upload_tokens": int(upload_tokens), "load": float(load),
            "rate_per_s": load * saturation_rate_per_s(), "emit_s": emit, "worst_gap_s": gap,
            "report": report, "upload_arrival_s": up["arrival_s"], "upload_first_token_s": first,
            "tpot_target_s": TANVI.tpot_target_s}


def table_rows(view: dict) -> list[list[str]]:
    """The percentile table as text rows: phase, students, TTFT p50/p99, ITL p99, longest gap."""
    rows = [["phase", "students", "TTFT p50", "TTFT p99", "ITL p99", "longest gap"]]
    for phase in ("before", "during", "after"):
        s = view["report"][phase]
        if s is None or s["requests"] == 0:
            rows.append([phase, "0", "–", "–", "–", "–"])
            continue

        def fmt(x):
            return "–" if x is None else f"{x:.2f} s"
        rows.append([phase, str(s["requests"]), fmt(s["ttft_s"]["p50"]), fmt(s["ttft_s"]["p99"]),
                     fmt(s["itl_s"]["p99"]), fmt(s["itl_max_s"])])
    return rows


class _Plot:
    """A figure made once; each update replaces the segments' data and the title."""

    def __init__(self, show_title: bool = True, show_legend: bool = True) -> None:
        from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

        self.fig = Figure(figsize=(9, 3.0))
        self.ax = self.fig.add_subplot()
        # one path with NaN breaks: thousands of segments drawn as one line (fast to redraw)
        (self.gaps,) = self.ax.plot([], [], color="#1f3b57", lw=1.6,
                                    label="a student's wait between two tokens (from, to)")
        self.ax.axhline(TANVI.tpot_target_s, color="black", ls="--", lw=1.2, label="TPOT target")
        self.span = self.ax.axvspan(0, 0, color="#d9534f", alpha=0.25,
                                    label="upload: arrival to first token")
        self.ax.set_yscale("log")
        # plain tick labels: log axes default to mathtext labels, most of a redraw's time
        self.ax.yaxis.set_major_locator(FixedLocator([0.01, 0.1, 1.0, 10.0, 100.0]))
        self.ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _pos: f"{y:g}"))
        self.ax.yaxis.set_minor_locator(NullLocator())
        self.ax.set_xlim(0, WINDOW_S)
        self.ax.set_xlabel("time (s)")
        self.ax.set_ylabel("gap between tokens (s)")
        if show_legend:
            self.ax.legend(loc="upper right", fontsize=8)
        self.show_title = show_title
        self.title = self.ax.set_title("", fontsize=9)
        self.fig.subplots_adjust(left=0.08, right=0.98, bottom=0.16,
                                 top=0.88 if show_title else 0.97)

    def update(self, view: dict) -> Figure:
        emit, gap = view["emit_s"], view["worst_gap_s"]
        nan = np.full(emit.size, np.nan)
        self.gaps.set_data(np.column_stack([emit - gap, emit, nan]).ravel(),
                           np.column_stack([gap, gap, nan]).ravel())
        top = max(float(gap.max()) if gap.size else 1.0, TANVI.tpot_target_s) * 2.0
        self.ax.set_ylim(5e-3, top)
        a = view["upload_arrival_s"]
        f = view["upload_first_token_s"] if view["upload_first_token_s"] is not None else WINDOW_S
        self.span.set_x(a)
        self.span.set_width(f - a)
        if self.show_title:
            self.title.set_text(caption(view))
        return self.fig


def caption(view: dict) -> str:
    """One line saying what the figure shows (policy, chunk, load, the upload and its first token)."""
    up = view["report"]["upload"]
    ttft = "no first token in the window" if up["ttft_s"] is None \
        else f"its first token after {up['ttft_s']:.1f} s"
    return (f"{view['policy_label']}, chunk {view['chunk_tokens']}, {view['rate_per_s']:.2f} "
            f"students/s; a {view['upload_tokens']:,}-token upload at "
            f"{view['upload_arrival_s']:g} s, {ttft}")


def draw(view: dict) -> Figure:
    """The students' inter-token gaps over time (each drawn from where it began to where it ended)."""
    return _Plot().update(view)


LEGEND_HTML = ("<span style='color:#1f3b57'>&#9644;</span> a student's wait between two tokens "
               "(from, to) &nbsp; <b>- -</b> TPOT target &nbsp; "
               "<span style='color:#d9534f'>&#9632;</span> upload: arrival to first token")


def table_html(view: dict) -> str:
    """The before/during/after table as a small HTML table."""
    rows = table_rows(view)
    head = "".join(f"<th style='padding:0 0.8em'>{c}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td style='padding:0 0.8em;text-align:right'>{c}</td>"
                                    for c in r) + "</tr>" for r in rows[1:])
    return (f"<p>{caption(view)}<br>{LEGEND_HTML}</p>"
            f"<table><tr>{head}</tr>{body}</table>")


def build():
    """The widget: policy, chunk size, upload size and load; the figure below."""
    import io

    import ipywidgets as widgets
    from IPython.display import Image, display

    style = {"description_width": "10em"}
    layout = widgets.Layout(width="34em")
    policy = widgets.Dropdown(options=list(POLICY_CHOICES), value="FCFS, whole prompts",
                              description="policy", style=style, layout=layout)
    chunk = widgets.SelectionSlider(options=list(CHUNK_CHOICES), value=default_chunk(),
                                    description="chunk (tokens)", style=style, layout=layout)
    upload = widgets.SelectionSlider(options=list(UPLOAD_CHOICES), value=TANVI.upload_tokens,
                                     description="upload (tokens)", style=style, layout=layout)
    load = widgets.FloatSlider(value=0.5, min=LOAD_RANGE[0], max=LOAD_RANGE[1], step=0.1,
                               description="load (× saturation)", style=style, layout=layout)
    out = widgets.Output()
    table = widgets.HTML()
    # caption and legend go in the HTML below the figure: matplotlib text is most of a redraw
    plot = _Plot(show_title=False, show_legend=False)

    def update(_change=None):
        view = compute_view(policy.value, chunk.value, upload.value, load.value)
        fig = plot.update(view)
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=72)
        table.value = table_html(view)
        out.clear_output(wait=True)
        with out:
            display(Image(data=png.getvalue(), format="png"))

    for w in (policy, chunk, upload, load):
        w.observe(update, names="value")
    update()
    return widgets.VBox([policy, chunk, upload, load, out, table])
