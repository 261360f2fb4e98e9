"""Chapter 4 widget: prefix length, unique length, cache size and subjects → hit rate and TTFT.

No math here: traffic comes from :func:`vidya_lab.caching.tutor_trace`, the replay and the TTFTs from
:func:`vidya_lab.caching.simulate` (through the cost model of :mod:`vidya_lab.sizing`).
:func:`compute_view` (numbers) and :func:`draw` (a matplotlib figure) are plain functions that tests
call without a browser; :func:`build` wires them to sliders.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.figure import Figure

from vidya_lab import caching
from vidya_lab.scenario import TANVI

#: Requests replayed per view (small, so a slider move redraws quickly) and their seed.
REQUESTS = 200
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


def draw(view: dict, fig: Figure | None = None) -> Figure:
    """Hit share per request (left) and TTFT without/with the cache (right); return the figure."""
    fig = fig or Figure(figsize=(9, 3.4))
    fig.clear()
    ax1, ax2 = fig.subplots(1, 2)
    share = view["hit_tokens"] / view["prompt_tokens"]
    ax1.plot(np.arange(1, share.size + 1), share, ".", ms=3, color="#246")
    ax1.set_ylim(-0.03, 1.03)
    ax1.set_xlabel("request (arrival order)")
    ax1.set_ylabel("share of prompt served from cache")
    s = view["summary"]
    ax1.set_title(f"token hit rate {s['token_hit_rate']:.1%}, request hit rate "
                  f"{s['request_hit_rate']:.1%}", fontsize=9)
    ms = 1e3
    top = float(np.max(view["ttft_without_s"])) * ms * 1.05
    bins = np.linspace(0.0, top, 50)
    ax2.hist(view["ttft_without_s"] * ms, bins=bins, color="#c66", alpha=0.7, label="without cache")
    ax2.hist(view["ttft_with_s"] * ms, bins=bins, color="#39c", alpha=0.7, label="with cache")
    ax2.set_xlabel("TTFT on an idle replica (ms)")
    ax2.set_ylabel("requests")
    ax2.set_title(f"p50 {s['ttft_s_p50_without'] * ms:.0f} ms → {s['ttft_s_p50_with'] * ms:.0f} ms",
                  fontsize=9)
    ax2.legend(fontsize=8)
    fig.suptitle(f"{view['replica']}: cache {view['cache_gb']:.3g} GB per GPU "
                 f"({s['cache_blocks_capacity']:,} blocks), {s['evictions']:,} evictions", fontsize=10)
    fig.tight_layout()
    return fig


def build():
    """The widget: sliders for prefix, unique tokens, cache size and subjects; the figure below."""
    import ipywidgets as widgets
    from IPython.display import display

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
    out = widgets.Output()

    def update(_change=None):
        fig = draw(compute_view(prefix.value, unique.value, cache.value, subjects.value))
        out.clear_output(wait=True)
        with out:
            display(fig)

    for w in (prefix, unique, cache, subjects):
        w.observe(update, names="value")
    update()
    return widgets.VBox([prefix, unique, cache, subjects, out])
