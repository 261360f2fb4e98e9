"""Speculative decoding: guess γ tokens cheaply, let the big model check them all in one step.

A *drafter* proposes γ tokens; the target model verifies them in one iteration that processes γ + 1
tokens per sequence, keeps the longest accepted run and adds one token of its own. With i.i.d.
acceptance α the expected tokens per target step are (1 − α^(γ+1)) / (1 − α) (Leviathan et al.,
arXiv:2211.17192, Eq. 1: :func:`spec_expected_tokens`), and with a draft step costing c target
steps the wall-time gain is that over (γc + 1) (their Theorem 3.8: :func:`spec_walltime_speedup`),
which assumes the verify step costs one plain step.

Here both costs come from the one cost model (:mod:`vidya_lab.sizing`), not from an assumed c:

* :class:`DraftModel` — a small model of the same family (sharing the tokenizer) on the target's
  GPUs: γ decode steps of its own :class:`~vidya_lab.sizing.Replica`, each with the calibrated
  per-iteration overhead, so a draft step can never be nearly free;
* :class:`PromptLookup` — n-gram (prompt lookup) drafting: no model runs, the draft is the text that
  followed the last few tokens where they appear in the prompt; it costs ≈ nothing on the GPU but
  proposes only while the answer quotes the prompt;
* :class:`AssumedCostDraft` — Theorem 3.8's c given as a number, for what-if questions only.

:func:`speculative_at_batch` prices one round at a batch: plain decoding is one decode step of the
batch; speculative decoding is the drafter's time plus a verify step of γ + 1 tokens per sequence.
At batch 1 the verify step is memory-bound and costs about one plain step; at large batch it is
compute-bound and costs up to γ + 1 plain steps, so the gain turns into a loss — as vLLM measured
(speed-ups at low request rates, slowdowns at high ones; facts.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

from vidya_lab import _validate as v
from vidya_lab import sizing
from vidya_lab.catalog import Model, get_model

#: The default draft for Llama-3 targets: the smallest Llama-3 model in the catalog (same tokenizer).
DEFAULT_DRAFT_MODEL = "llama-3.1-8b"
#: Largest batch the speculative functions price (a formula: no memory is allocated per sequence).
MAX_BATCH = 10**6
#: Most draft tokens per step.
MAX_GAMMA = 64


def spec_expected_tokens(alpha: float, gamma: int) -> float:
    """Expected tokens per target-model step: (1 − α^(γ+1)) / (1 − α); γ + 1 at α = 1.

    α is the probability the target accepts a draft token (i.i.d.), γ the draft tokens per step.
    Leviathan et al. (arXiv:2211.17192) §3.1, Eq. 1. Limits: α → 0 gives 1 (only the target's own
    token), α → 1 gives γ + 1.
    """
    a = v.check_fraction("alpha", alpha)
    g = v.check_int("gamma", gamma, minimum=0, maximum=MAX_GAMMA)
    if a == 1.0:
        return float(g + 1)
    return (1.0 - a ** (g + 1)) / (1.0 - a)


def spec_walltime_speedup(alpha: float, gamma: int, draft_cost_ratio: float) -> float:
    """Expected wall-time improvement: (1 − α^(γ+1)) / ((1 − α)(γc + 1)).

    c = draft step time / target step time. Leviathan et al. Theorem 3.8; it assumes the target's
    step costs the same for γ + 1 tokens as for one (true at batch 1, memory-bound), which
    :func:`speculative_at_batch` does not assume.
    """
    c = v.check_real("draft_cost_ratio", draft_cost_ratio, minimum=0.0)
    return spec_expected_tokens(alpha, gamma) / (gamma * c + 1.0)


@functools.lru_cache(maxsize=64)
def _draft_replica(model: Model, tp: int, target: sizing.Replica) -> sizing.Replica:
    if model.vocab_size != target.model.vocab_size:
        raise ValueError(f"draft model {model.id} must share the target's tokenizer: vocabulary "
                         f"{model.vocab_size} vs {target.model.vocab_size} ({target.model.id})")
    try:
        d = sizing.Replica(model, target.gpu, tp=tp, precision=target.precision,
                           kv_precision=target.kv_precision, memory_rule=target.memory_rule,
                           calibration=target.calibration, interconnect=target.interconnect,
                           inter_node=target.inter_node)
    except ValueError as exc:
        raise ValueError(f"draft tp={tp}: {exc}") from None
    if d.weights_bytes_per_gpu * d.n_gpus >= target.weights_bytes_per_gpu * target.n_gpus:
        raise ValueError(f"draft model {model.id} must be smaller than the target {target.model.id}")
    return d


@dataclass(frozen=True)
class DraftModel:
    """A small model drafts γ tokens, one decode step each, on the target's GPUs.

    Parameters
    ----------
    alpha : the probability the target accepts one of its tokens (measure it on your traffic;
        Leviathan et al. saw 0.5–0.9 for drafts ~100× smaller than the target).
    model : a catalog id or :class:`~vidya_lab.catalog.Model` sharing the target's vocabulary and
        smaller than it (default :data:`DEFAULT_DRAFT_MODEL`).
    tp : the draft's tensor-parallel degree (default the target's, as vLLM runs a draft unless told
        otherwise; 1 is the other common choice). Its precision, calibration and links are the
        target's.
    """

    alpha: float
    model: str | Model = DEFAULT_DRAFT_MODEL
    tp: int | None = None
    kind: ClassVar[str] = "draft-model"

    def __post_init__(self) -> None:
        v.check_fraction("alpha", self.alpha)
        object.__setattr__(self, "model", get_model(self.model))
        if self.tp is not None:
            v.check_int("tp", self.tp, minimum=1, maximum=64)

    def replica(self, target: sizing.Replica) -> sizing.Replica:
        """The draft's replica on the target's GPUs (same precision, calibration and links)."""
        sizing._as_replica(target)
        return _draft_replica(self.model, target.tp if self.tp is None else self.tp, target)

    def expected_tokens(self, gamma: int) -> float:
        """Tokens per target step: :func:`spec_expected_tokens`."""
        return spec_expected_tokens(self.alpha, gamma)

    def proposing_share(self, gamma: int) -> float:
        """Share of steps in which a sequence has draft tokens to verify: always."""
        return 1.0

    def draft_time_s(self, target: sizing.Replica, batch: int, context_tokens: int, gamma: int,
                     plain_step_s: float) -> float:
        """γ decode steps of the draft at contexts ctx, ctx + 1, …: the cost model, overhead included."""
        if gamma == 0:
            return 0.0
        return sizing.decode_steps_time_s(self.replica(target), batch, context_tokens, gamma)


@dataclass(frozen=True)
class PromptLookup:
    """Prompt-lookup (n-gram) drafting: propose what followed the last few tokens in the prompt.

    No model runs (vLLM's "ngram" proposer matches on the CPU), so the draft costs ≈ 0 GPU time; but
    a draft exists only while the answer is quoting the prompt. Model: a share ``quote_fraction`` of
    the answer's tokens lie in quoted runs of geometric length with mean ``mean_quote_tokens``. Inside
    a run each proposed token is accepted while the run goes on, α = 1 − 1/mean_quote_tokens, and a
    step yields E = :func:`spec_expected_tokens` (α, γ) tokens; outside, no draft, one token. Per
    answer token a sequence spends q/E + (1 − q) steps, so

        tokens per step = 1 / (q/E + 1 − q),   share of steps with a draft f = (q/E) / (q/E + 1 − q).

    The few tokens a run needs before its n-gram matches are ignored.
    """

    quote_fraction: float
    mean_quote_tokens: float
    kind: ClassVar[str] = "prompt-lookup"

    def __post_init__(self) -> None:
        v.check_fraction("quote_fraction", self.quote_fraction)
        v.check_real("mean_quote_tokens", self.mean_quote_tokens, minimum=1.0, maximum=1e9)

    @property
    def alpha(self) -> float:
        """Acceptance of a proposed token inside a quote: 1 − 1/mean_quote_tokens."""
        return 1.0 - 1.0 / self.mean_quote_tokens

    def _steps_per_token(self, gamma: int) -> tuple[float, float]:
        q = self.quote_fraction
        quoted = q / spec_expected_tokens(self.alpha, gamma)
        return quoted, quoted + (1.0 - q)

    def expected_tokens(self, gamma: int) -> float:
        """Tokens per target step: 1 / (q/E + 1 − q)."""
        return 1.0 / self._steps_per_token(gamma)[1]

    def proposing_share(self, gamma: int) -> float:
        """Share of steps with a draft to verify: (q/E) / (q/E + 1 − q)."""
        quoted, total = self._steps_per_token(gamma)
        return quoted / total

    def draft_time_s(self, target, batch, context_tokens, gamma, plain_step_s) -> float:
        """No draft model runs: 0 s of GPU time."""
        return 0.0


@dataclass(frozen=True)
class AssumedCostDraft:
    """A draft whose γ steps cost γ·c plain target steps, c given (Theorem 3.8's parameter).

    For what-if questions only: a real draft's cost follows from its model (:class:`DraftModel`),
    and the calibrated per-iteration overhead alone keeps c well above the 0.05 measured on TPUs.
    """

    alpha: float
    draft_cost_ratio: float
    kind: ClassVar[str] = "assumed-cost"

    def __post_init__(self) -> None:
        v.check_fraction("alpha", self.alpha)
        v.check_real("draft_cost_ratio", self.draft_cost_ratio, minimum=0.0, maximum=1e3)

    def expected_tokens(self, gamma: int) -> float:
        return spec_expected_tokens(self.alpha, gamma)

    def proposing_share(self, gamma: int) -> float:
        return 1.0

    def draft_time_s(self, target, batch, context_tokens, gamma, plain_step_s) -> float:
        return gamma * self.draft_cost_ratio * plain_step_s


DRAFTERS = (DraftModel, PromptLookup, AssumedCostDraft)


def _verify_step_s(r: sizing.Replica, b: int, ctx: int, gamma: int, share: float) -> float:
    """One target iteration: a share ``share`` of the ``b`` sequences verifies γ + 1 tokens (a chunk
    attending to its context, γ + 1 logit rows); the rest decodes one token as usual."""
    t = gamma + 1
    bp, bd = b * share, b * (1.0 - share)
    return r.step_time_s(bp * t, bp * (t * ctx + t * (t + 1) / 2), bp * (ctx + t), bp * t, bd, bd * ctx)


def speculative_at_batch(r: sizing.Replica, batch: int, context_tokens: int, drafter,
                         gamma: int) -> dict:
    """One round of speculative decoding at ``batch`` sequences of ``context_tokens``, priced by the
    cost model, against plain decoding.

    Plain: one decode step (:func:`vidya_lab.sizing.decode_step_time_s`), one token per sequence.
    Speculative: the drafter's time (``drafter.draft_time_s``) + a verify step of γ + 1 tokens per
    proposing sequence (``Replica.step_time_s``); each sequence advances ``drafter.expected_tokens``.

    Returns ``batch``, ``drafter`` (its kind), ``alpha``, ``gamma``, ``plain_step_s``,
    ``verify_step_s``, ``draft_s``, ``draft_cost_ratio`` (draft_s / (γ · plain step): Theorem 3.8's
    c, derived), ``proposing_share``, ``expected_tokens``, ``plain_tokens_per_s``,
    ``spec_tokens_per_s``, ``speedup`` (their ratio), ``draft_weights_bytes_per_gpu``.
    """
    sizing._as_replica(r)
    v.check_instance("drafter", drafter, DRAFTERS, "DraftModel, PromptLookup or AssumedCostDraft")
    b = v.check_int("batch", batch, minimum=1, maximum=MAX_BATCH)
    ctx = v.check_int("context_tokens", context_tokens, minimum=1, maximum=10**8)
    g = v.check_int("gamma", gamma, minimum=0, maximum=MAX_GAMMA)
    plain = sizing.decode_step_time_s(r, b, ctx)
    share = drafter.proposing_share(g) if g > 0 else 0.0
    verify = _verify_step_s(r, b, ctx, g, share)
    draft = drafter.draft_time_s(r, b, ctx, g, plain)
    e = drafter.expected_tokens(g)
    spec_tps = b * e / (verify + draft)
    weights = drafter.replica(r).weights_bytes_per_gpu if isinstance(drafter, DraftModel) else 0.0
    return {"batch": b, "drafter": drafter.kind, "alpha": drafter.alpha, "gamma": g,
            "plain_step_s": plain, "verify_step_s": verify, "draft_s": draft,
            "draft_cost_ratio": draft / (g * plain) if g else 0.0, "proposing_share": share,
            "expected_tokens": e, "plain_tokens_per_s": b / plain, "spec_tokens_per_s": spec_tps,
            "speedup": spec_tps / (b / plain), "draft_weights_bytes_per_gpu": weights}


def speculative_break_even_batch(r: sizing.Replica, context_tokens: int, drafter, gamma: int,
                                 max_batch: int = 4096) -> int | None:
    """Smallest batch at which speculative decoding is slower than plain decoding
    (:func:`speculative_at_batch` speedup < 1), or None if it never is up to ``max_batch``.

    The speedup falls with batch (the verify step turns compute-bound); found by bisection.
    """
    hi = v.check_int("max_batch", max_batch, minimum=1, maximum=MAX_BATCH)

    def loses(b: int) -> bool:
        return speculative_at_batch(r, b, context_tokens, drafter, gamma)["speedup"] < 1.0

    if not loses(hi):
        return None
    lo = 1
    if loses(lo):
        return 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if loses(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _drafter(alpha, draft_cost_ratio, draft_model, draft_tp):
    if draft_cost_ratio is not None:
        return AssumedCostDraft(alpha, draft_cost_ratio)
    v.check_instance("draft_model", draft_model, (str, Model), "model id string or catalog.Model")
    return DraftModel(alpha, draft_model, draft_tp)


def spec_decode_at_batch(r: sizing.Replica, batch: int, context_tokens: int, alpha: float,
                         gamma: int, draft_cost_ratio: float | None = None, *,
                         draft_model: str | Model = DEFAULT_DRAFT_MODEL,
                         draft_tp: int | None = None) -> dict:
    """Draft-model speculative decoding at a batch: :func:`speculative_at_batch` with a
    :class:`DraftModel` (``draft_model`` at ``draft_tp``, acceptance ``alpha``) whose cost comes from
    the cost model; or, if ``draft_cost_ratio`` is given, an :class:`AssumedCostDraft` (γ·c plain
    steps: a what-if). Same keys as :func:`speculative_at_batch`.
    """
    return speculative_at_batch(r, batch, context_tokens,
                                _drafter(alpha, draft_cost_ratio, draft_model, draft_tp), gamma)


def spec_break_even_batch(r: sizing.Replica, context_tokens: int, alpha: float, gamma: int,
                          draft_cost_ratio: float | None = None, max_batch: int = 4096, *,
                          draft_model: str | Model = DEFAULT_DRAFT_MODEL,
                          draft_tp: int | None = None) -> int | None:
    """:func:`speculative_break_even_batch` for the drafter of :func:`spec_decode_at_batch`."""
    return speculative_break_even_batch(
        r, context_tokens, _drafter(alpha, draft_cost_ratio, draft_model, draft_tp), gamma, max_batch)
