"""Chapter 4 widget: prefix length, unique length, cache size and subjects → hit rate and TTFT.

No math here: traffic comes from :func:`vidya_lab.caching.tutor_trace`, the replay and the TTFTs from
:func:`vidya_lab.caching.simulate` (through the cost model of :mod:`vidya_lab.sizing`).
:func:`compute_view` (numbers), :func:`draw` (a matplotlib figure) and :func:`summary_html` are plain
functions that tests call without a browser; :func:`build` wires them to sliders and redraws one
figure in place.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.figure import Figure

from vidya_lab import caching
from vidya_lab.scenario import TANVI

#: Requests replayed per view (small, so a slider move redraws quickly) and their seed.
REQUESTS = 100
SEED = 4
PREFIX_RANGE_TOKENS = (0, 8000)
UNIQUE_RANGE_TOKENS = (1, 4000)
SUBJECTS_RANGE = (1, 24)
#: Cache size slider, GB (1e9 bytes) per GPU, on a log scale.
CACHE_RANGE_GB = (0.01, 40.0)


@lru_cache(maxsize=32)
def trace_for(prefix_tokens: int, unique_tokens: int, subjects: int) -> caching.PromptTrace:
    """Tanvi's single-turn traffic with these lengths (cached: moving the cache slider re-uses it)."""
    return caching.tutor_trace(REQUESTS, seed=SEED, syllabus_tokens=int(prefix_tokens),
                               subjects=int(subjects), subject_tokens=TANVI.subject_prompt_tokens,
                               question_tokens=int(unique_tokens))


def compute_view(prefix_tokens: int, unique_tokens: int, cache_gb: float, subjects: int) -> dict:
    """Everything the widget shows, as numbers.

    Returns
    -------
    dict with the inputs, ``summary`` (:func:`vidya_lab.caching.simulate`'s summary),
    ``hit_tokens`` and ``prompt_tokens`` (per request, tokens), ``ttft_without_s`` and ``ttft_with_s``
    (per request, seconds), and ``replica`` (a one-line description).
    """
    r = caching.default_replica()
    trace = trace_for(int(prefix_tokens), int(unique_tokens), int(subjects))
    res = caching.simulate(trace, r, cache_bytes=float(cache_gb) * 1e9)
    return {
        "prefix_tokens": int(prefix_tokens), "unique_tokens": int(unique_tokens),
        "cache_gb": float(cache_gb), "subjects": int(subjects),
        "summary": res.summary, "hit_tokens": res.hit_tokens, "prompt_tokens": res.prompt_tokens,
        "ttft_without_s": res.ttft_without_s, "ttft_with_s": res.ttft_with_s,
        "replica": f"{r.model.id} on {r.tp} x {r.gpu.id}",
    }


class _Plot:
    """A figure made once; each update replaces the lines' data (fast to redraw)."""

    def __init__(self, show_titles: bool = True) -> None:
        self.fig = Figure(figsize=(9, 3.2))
        self.ax1, self.ax2 = self.fig.subplots(1, 2)
        (self.share,) = self.ax1.plot([], [], ".", ms=3, color="#246")
        self.ax1.set_xlim(0, REQUESTS + 1)
        self.ax1.set_ylim(-0.03, 1.03)
        self.ax1.set_xlabel("request (arrival order)")
        self.ax1.set_ylabel("share of prompt from cache")
        (self.without,) = self.ax2.plot([], [], color="#c66", lw=2, label="without cache")
        (self.with_,) = self.ax2.plot([], [], color="#39c", lw=2, label="with cache")
        self.ax2.set_ylim(0, 1.0)
        self.ax2.set_xlabel("TTFT on an idle replica (ms)")
        self.ax2.set_ylabel("share of requests at or below")
        if show_titles:
            self.ax2.legend(loc="lower right", fontsize=8)
        else:  # above the panel: the frames draw the curves after (over) the legend
            self.ax2.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, fontsize=8,
                            frameon=False)
        self.show_titles = show_titles
        self.t1 = self.ax1.set_title("", fontsize=9)
        self.t2 = self.ax2.set_title("", fontsize=9)
        self.fig.subplots_adjust(left=0.08, right=0.98, bottom=0.17, wspace=0.28,
                                 top=0.88 if show_titles else 0.9)
        self._frames = None

    @property
    def frames(self):
        """The widget's :class:`~vidya_lab.widgets._blit.Frames`: the left panel's axes (fixed
        limits) and the legend are drawn once; a frame draws the points, the two curves and the
        right panel's x axis (its limit follows the slowest TTFT)."""
        if self._frames is None:
            from vidya_lab.widgets._blit import Frames

            self._frames = Frames(self.fig, [self.share, self.without, self.with_,
                                             self.ax2.xaxis], dpi=72)
        return self._frames

    def png(self, view: dict) -> bytes:
        """The widget's frame for ``view``, PNG bytes."""
        self.update(view)
        return self.frames.png()

    def update(self, view: dict) -> Figure:
        share = view["hit_tokens"] / view["prompt_tokens"]
        self.share.set_data(np.arange(1, share.size + 1), share)
        ms = 1e3
        frac = np.arange(1, share.size + 1) / share.size
        self.without.set_data(np.sort(view["ttft_without_s"]) * ms, frac)
        self.with_.set_data(np.sort(view["ttft_with_s"]) * ms, frac)
        self.ax2.set_xlim(0, float(np.max(view["ttft_without_s"])) * ms * 1.05)
        if self.show_titles:
            left, right = captions(view)
            self.t1.set_text(left)
            self.t2.set_text(right)
        return self.fig


def captions(view: dict) -> tuple[str, str]:
    """The two panels' one-line summaries (hit rates; median TTFT without → with)."""
    s = view["summary"]
    return (f"token hit rate {s['token_hit_rate']:.1%}, request hit rate {s['request_hit_rate']:.1%}",
            f"TTFT p50 {s['ttft_s_p50_without'] * 1e3:.0f} ms → {s['ttft_s_p50_with'] * 1e3:.0f} ms")


def summary_html(view: dict) -> str:
    """What the figure shows, as a line of HTML under it."""
    s = view["summary"]
    left, right = captions(view)
    return (f"<p>{view['replica']}: cache {view['cache_gb']:.3g} GB per GPU "
            f"({s['cache_blocks_capacity']:,} blocks of {s['block_tokens']} tokens), "
            f"{s['evictions']:,} evictions.<br>{left}; {right}.</p>")


def draw(view: dict, fig: Figure | None = None) -> Figure:
    """Hit share per request (left) and TTFT without/with the cache as cumulative shares (right)."""
    return _Plot().update(view)


def build():
    """The widget: sliders for prefix, unique tokens, cache size and subjects; the figure below."""
    import ipywidgets as widgets
    style = {"description_width": "13em"}
    layout = widgets.Layout(width="34em")
    prefix = widgets.IntSlider(value=TANVI.syllabus_prompt_tokens, min=PREFIX_RANGE_TOKENS[0],
                               max=PREFIX_RANGE_TOKENS[1], step=100, description="shared prefix (tokens)",
                               style=style, layout=layout, continuous_update=False)
    unique = widgets.IntSlider(value=TANVI.question_tokens_mean, min=UNIQUE_RANGE_TOKENS[0],
                               max=UNIQUE_RANGE_TOKENS[1], step=10, description="unique (tokens)",
                               style=style, layout=layout, continuous_update=False)
    cache = widgets.FloatLogSlider(value=1.0, base=10, min=np.log10(CACHE_RANGE_GB[0]),
                                   max=np.log10(CACHE_RANGE_GB[1]), step=0.1,
                                   description="cache (GB per GPU)", style=style, layout=layout,
                                   continuous_update=False)
    subjects = widgets.IntSlider(value=TANVI.subjects, min=SUBJECTS_RANGE[0], max=SUBJECTS_RANGE[1],
                                 description="subjects", style=style, layout=layout,
                                 continuous_update=False)
    text = widgets.HTML()
    plot = _Plot(show_titles=False)  # titles go in the HTML: matplotlib text is most of a redraw
    # the figure: one PNG, replaced on every change, shown at its own width (not stretched)
    out = widgets.Image(format="png", layout=widgets.Layout(
        width=f"{plot.frames.width_px}px", max_width="100%"))

    def update(_change=None):
        view = compute_view(prefix.value, unique.value, cache.value, subjects.value)
        png = plot.png(view)
        text.value = summary_html(view)
        out.value = png

    for w in (prefix, unique, cache, subjects):
        w.observe(update, names="value")
    update()
    return widgets.VBox([prefix, unique, cache, subjects, out, text])
