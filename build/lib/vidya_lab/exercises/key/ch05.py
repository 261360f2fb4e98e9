"""Chapter 5's answer key: the freeze, chunked prefill and its cost, the budget, the queues of an
upload replica, and disaggregation.

Every answer is a function of the reader's givens ``g`` (:data:`vidya_lab.exercises.ch05.GIVENS`)
computed by the package: step times by the cost model (:func:`vidya_lab.sizing.iteration_time_s`),
chunking by :func:`vidya_lab.admission.chunked_prefill_time_s`, waits and staffing by
:mod:`vidya_lab.queueing`, budgets and pools by :mod:`vidya_lab.admission.disaggregation`. The
replica is the chapter's: the scenario's model on four H100s with TP 4.
"""

from __future__ import annotations

import math
from functools import lru_cache

from vidya_lab import admission, catalog, plan, queueing, sizing
from vidya_lab.admission import disaggregation as dg
from vidya_lab.exercises.ch05 import COST_CHUNK_TOKENS, GIVENS, replica
from vidya_lab.exercises.core import Exercise, Mistake
from vidya_lab.scenario import TANVI

ISL, OSL = TANVI.prompt_tokens_mean, TANVI.answer_tokens_mean
#: A value no answer takes (every answer here is > 0): what a helper returns when a deployment or a
#: mistake does not exist for the reader's numbers.
NEVER = -1.0


def _pick(*names: str) -> dict:
    return {k: GIVENS[k] for k in names}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 0.011 * max(abs(a), abs(b))


def _separated(answer, *mistakes: Mistake) -> tuple[Mistake, ...]:
    """The mistakes, each recognised only where its value differs from the answer and from the
    mistakes listed before it (for some givens two wrong paths give the same number); where it does
    not, its value is ``-(k + 1)``, which no reader's answer is, so every hint stays its own."""
    out = []
    for k, m in enumerate(mistakes):
        def value(g, k=k, f=m.value):
            x = float(f(g))
            taken = [float(answer(g))] + [float(mistakes[j].value(g)) for j in range(k)]
            return -(k + 1.0) if x < 0 or any(_close(x, y) for y in taken) else x
        out.append(Mistake(value, m.hint))
    return tuple(out)


# ----------------------------------------------------------------------------- 5.1 the freeze

@lru_cache(maxsize=256)
def upload_step_s(upload_tokens: int = TANVI.upload_tokens) -> float:
    """The FCFS freeze: one prefill step of the whole upload, seconds."""
    return sizing.iteration_time_s(replica(), prefill=[(int(upload_tokens), 0)])


def _step(g) -> float:
    return upload_step_s(g["upload_tokens"])


def _token_by_token_s(g) -> float:
    u = g["upload_tokens"]
    return u * sizing.iteration_time_s(replica(), decode_contexts=[u])


def _compute_only_s(g) -> float:
    return sizing.iteration_breakdown(replica(), prefill=[(g["upload_tokens"], 0)])["compute_s"]


def _matmul_only_s(g) -> float:
    r = replica()
    cost = r._cost
    return cost.flops_per_token * g["upload_tokens"] / cost.flops_per_s


# ----------------------------------------------------------------------------- 5.2 TPOT hides it

def _tpot_with_stall(g, gaps_of_n: int = -1) -> float:
    n, stall, step = g["answer_tokens"], g["stall_s"], g["step_ms"] / 1000.0
    return (stall + (n - 2) * step) / (n + gaps_of_n)


# ----------------------------------------------------------------------------- 5.3 chunks

def _steps(g, decodes: bool = True, up: bool = True) -> int:
    per = g["chunk_tokens"] - (g["decoding_students"] if decodes else 0)
    u = g["upload_tokens"]
    return math.ceil(u / per) if up else u // per


# ----------------------------------------------------------------------------- 5.4 chunking's cost

@lru_cache(maxsize=4)
def _chunk_parts() -> dict:
    r, u, c = replica(), TANVI.upload_tokens, COST_CHUNK_TOKENS
    chunked = admission.chunked_prefill_time_s(r, u, c)
    extra = chunked - upload_step_s(u)
    n = math.ceil(u / c)
    one = sizing.iteration_breakdown(r, prefill=[(c, 0)])
    return {"extra_s": extra, "extra_steps": n - 1, "per_step_s": extra / (n - 1),
            "weight_read_s": one["weight_read_s"], "host_s": one["overhead_s"]}


# ----------------------------------------------------------------------------- 5.5, 5.9 pools

def _cached(g) -> int:
    return plan.prefix_tokens(TANVI) if g["cache"] == "warm" else 0


@lru_cache(maxsize=512)
def _stall_free(tpot: float, rate: float, cached: int = 0) -> dict:
    r = replica()
    budget = admission.stall_free_budget(r, ISL, OSL, tpot, cached)
    return admission.colocated_pool(dg._with_budget(r, budget), rate, ISL, OSL, tpot, cached)


@lru_cache(maxsize=512)
def _engine_budget(tpot: float, rate: float, cached: int = 0) -> dict:
    return admission.colocated_pool(replica(), rate, ISL, OSL, tpot, cached)


@lru_cache(maxsize=512)
def _disaggregated(tpot: float, rate: float, cached: int = 0) -> dict:
    r = replica()
    return admission.disaggregated(r, r, rate, ISL, OSL, TANVI.ttft_target_s, tpot, cached)


def _budget_gpus(g) -> int:
    return _stall_free(g["tpot_target_s"], g["peak_rps"])["gpus"]


def _cheaper(g) -> tuple[int, float]:
    """(GPUs of the cheaper deployment, GPUs of the other or NEVER) at the reader's target and
    cache. Colocated counts only at a budget that keeps every iteration within the target; where
    no budget does, disaggregation is the only deployment that meets it."""
    args = (g["tpot_target_s"], g["peak_rps"], _cached(g))
    dis = _disaggregated(*args)
    options = [(dis["cost_per_hour_usd"], dis["gpus"])]
    try:
        colo = _stall_free(*args)
        options.append((colo["cost_per_hour_usd"], colo["gpus"]))
    except ValueError:
        pass
    options.sort()
    return options[0][1], options[1][1] if len(options) > 1 else NEVER


# ----------------------------------------------------------------------------- 5.6, 5.7 queues

def _md1_wait_s(g) -> float:
    return queueing.md1_mean_wait_s(g["upload_rate_per_s"], _step(g))


def _replicas_needed(g, rate_is_time: bool = False) -> int:
    s = _step(g)
    return queueing.servers_needed(g["exam_upload_rate_per_s"], s if rate_is_time else 1.0 / s,
                                   max_wait_probability=g["max_wait_probability"]).servers


# ----------------------------------------------------------------------------- 5.8 the transfer

def _transfer_s(g) -> float:
    return admission.kv_transfer_s(replica(), g["prompt_tokens"], g["link"])


def _transfer_with(g, bytes_factor: float) -> float:
    lk = catalog.get_link(g["link"])
    r = replica()
    lanes = r.n_gpus if lk.id in dg.SHARED_BY_NODE else 1
    return lk.p2p_time_s(r.kv_bytes_per_token_per_gpu * g["prompt_tokens"] * lanes * bytes_factor)


def _one_nic_ignored(g) -> float:
    lk = catalog.get_link(g["link"])
    if lk.id not in dg.SHARED_BY_NODE:
        return NEVER                                  # on this link the lanes are the GPUs' own
    r = replica()
    return lk.p2p_time_s(r.kv_bytes_per_token_per_gpu * g["prompt_tokens"])


EXERCISES = [
    Exercise(
        id="5.1",
        prompt="seconds FCFS freezes every decoding student while your upload prefills in one step",
        answer=_step,
        givens=_pick("upload_tokens"),
        unit="s",
        level="compute",
        mistakes=_separated(
            _step,
            Mistake(_token_by_token_s,
                    "a prefill is not one token per step: the whole prompt goes through the model "
                    "in ONE step, all positions in parallel"),
            Mistake(_matmul_only_s,
                    "that is the matrix multiplies alone; at this length attention's work, "
                    "4·(h/tp)·hd·L per (query, key) pair over U(U+1)/2 pairs, is a large part too"),
            Mistake(_compute_only_s,
                    "that is the compute term alone; the step also pays the tensor-parallel "
                    "all-reduces (per token) and the per-layer and per-step overheads"),
            Mistake(lambda g: admission.chunked_prefill_time_s(replica(), g["upload_tokens"],
                                                               COST_CHUNK_TOKENS),
                    "that is the upload prefilled in 512-token chunks; FCFS takes the whole "
                    "prompt in one step"),
        ),
        hint="compute = (2·P_act·U + 4·(h/tp)·hd·L·U(U+1)/2) / (peak × η); add the all-reduces "
             "and the overheads (the breakdown table); or sizing.iteration_time_s(r, "
             "prefill=[(U, 0)])",
    ),
    Exercise(
        id="5.2",
        prompt="the TPOT (s) of an answer with one long stall and every other gap normal",
        answer=_tpot_with_stall,
        givens=_pick("answer_tokens", "stall_s", "step_ms"),
        unit="s",
        level="explain",
        mistakes=_separated(
            _tpot_with_stall,
            Mistake(lambda g: g["step_ms"] / 1000.0,
                    "that is a normal gap; TPOT averages every gap of the answer, the stall too"),
            Mistake(lambda g: g["stall_s"],
                    "that is the longest gap (the ITL maximum), the number that sees the freeze; "
                    "TPOT is the mean gap"),
            Mistake(lambda g: g["stall_s"] / (g["answer_tokens"] - 1),
                    "you spread the stall alone over the gaps; the other n − 2 gaps count too"),
        ),
        hint="n tokens have n − 1 gaps: one is the stall, n − 2 are normal; TPOT = their mean",
    ),
    Exercise(
        id="5.3",
        prompt="iterations until your upload's first token under chunked prefill",
        answer=_steps,
        givens=_pick("upload_tokens", "chunk_tokens", "decoding_students"),
        kind="integer",
        unit="iterations",
        level="compute",
        mistakes=_separated(
            _steps,
            Mistake(lambda g: _steps(g, decodes=False),
                    "the decoding students take one token each of every iteration's budget: only "
                    "budget − decodes tokens are left for the upload"),
            Mistake(lambda g: _steps(g, up=False),
                    "rounded down: the last, partial chunk is an iteration too (round up)"),
        ),
        hint="ceil(upload tokens / (budget − decoding students))",
    ),
    Exercise(
        id="5.4",
        prompt="seconds each extra iteration adds when the upload is prefilled alone in 512-token "
               "chunks",
        answer=lambda g: _chunk_parts()["per_step_s"],
        unit="s",
        level="explain",
        mistakes=_separated(
            lambda g: _chunk_parts()["per_step_s"],
            Mistake(lambda g: _chunk_parts()["weight_read_s"],
                    "that is one read of the weights; a 512-token chunk on TP 4 is compute-bound "
                    "(its compute takes longer than the weight read), so the read hides under it "
                    "and is not what repeats"),
            Mistake(lambda g: _chunk_parts()["host_s"],
                    "that is the host's overhead alone; every iteration also pays each layer's "
                    "fixed cost and the fixed latency of its all-reduces"),
            Mistake(lambda g: _chunk_parts()["extra_s"],
                    "that is the whole extra time; divide by the extra iterations (chunks − 1)"),
        ),
        hint="(chunked time − one-step time) / (number of chunks − 1); compare it with the parts "
             "of one iteration that do not grow with its tokens",
    ),
    Exercise(
        id="5.5",
        prompt="GPUs for your peak at the largest token budget whose iterations all meet your "
               "TPOT target",
        answer=_budget_gpus,
        givens=_pick("tpot_target_s", "peak_rps"),
        kind="integer",
        unit="GPUs",
        level="design",
        mistakes=_separated(
            _budget_gpus,
            Mistake(lambda g: _engine_budget(g["tpot_target_s"], g["peak_rps"])["gpus"],
                    "that is the fleet at the engine's default budget (8,192 tokens), whose full "
                    "iterations are several times your TPOT target"),
            Mistake(lambda g: _budget_gpus(g) / replica().n_gpus,
                    "that is replicas; each replica is 4 GPUs (TP 4)"),
        ),
        hint="admission.stall_free_budget(r, isl, osl, target) chooses the budget; a replica with "
             "that budget (max_batched_tokens) has the capacity sizing.capacity_rps gives; "
             "GPUs = 4 × ceil(peak / capacity)",
    ),
    Exercise(
        id="5.6",
        prompt="mean wait (s) of an upload at a one-at-a-time summary replica (fixed service)",
        answer=_md1_wait_s,
        givens=_pick("upload_tokens", "upload_rate_per_s"),
        unit="s",
        level="compute",
        mistakes=_separated(
            _md1_wait_s,
            Mistake(lambda g: queueing.mm1_mean_wait_s(g["upload_rate_per_s"], 1.0 / _step(g)),
                    "that is M/M/1 (exponential service); every upload of this size takes the "
                    "same time, so M/D/1: Pollaczek–Khinchine with no variance halves the wait"),
            Mistake(lambda g: _md1_wait_s(g) + _step(g),
                    "you added the service itself: the question asks for the wait BEFORE service"),
            Mistake(lambda g: (g["upload_rate_per_s"] * _step(g))
                    / (1.0 - g["upload_rate_per_s"] * _step(g)),
                    "ρ/(1 − ρ) is a number of requests (M/M/1's mean in system), not a time"),
        ),
        hint="M/D/1: W_q = ρ·S / (2(1 − ρ)), ρ = λ·S, with S the one-step time of exercise 5.1",
    ),
    Exercise(
        id="5.7",
        prompt="summary replicas so that at most your share of uploads wait (exponential service)",
        answer=_replicas_needed,
        givens=_pick("upload_tokens", "exam_upload_rate_per_s", "max_wait_probability"),
        kind="integer",
        unit="replicas",
        level="compute",
        mistakes=_separated(
            _replicas_needed,
            Mistake(lambda g: math.ceil(g["exam_upload_rate_per_s"] * _step(g)),
                    "that only makes the queue stable (ρ < 1); at that utilisation most uploads "
                    "still wait: use Erlang C"),
            Mistake(lambda g: _replicas_needed(g, rate_is_time=True),
                    "service_rate_per_s is a rate: 1 / (seconds per upload), not the seconds"),
        ),
        hint="add servers until Erlang C, the probability an upload waits, is at most your share: "
             "queueing.servers_needed(λ, 1/S, max_wait_probability=p)",
    ),
    Exercise(
        id="5.8",
        prompt="seconds to send one request's prompt KV from a prefill to a decode replica",
        answer=_transfer_s,
        givens=_pick("link", "prompt_tokens"),
        unit="s",
        level="compute",
        mistakes=_separated(
            _transfer_s,
            Mistake(lambda g: _transfer_with(g, 4.0),
                    "a TP-4 GPU holds 2 of the model's 8 KV heads: its shard is a quarter of a "
                    "token's KV, and the four shards travel at once, each over its GPU's own lane"),
            Mistake(lambda g: _transfer_with(g, 0.5),
                    "the cache holds a K and a V vector per layer and KV head: a factor 2 is "
                    "missing"),
            Mistake(_one_nic_ignored,
                    "this link is one NIC for the whole node: all four GPUs' shards go through it"),
        ),
        hint="bytes per GPU = 2 × layers × (KV heads / tp) × head_dim × 2 bytes × tokens; time = "
             "latency + bytes / the link's bandwidth per direction (times the GPUs sharing it)",
    ),
    Exercise(
        id="5.9",
        prompt="GPUs of the cheaper deployment for your peak, TPOT target and cache",
        answer=lambda g: _cheaper(g)[0],
        givens=_pick("peak_rps", "tpot_target_s", "cache"),
        kind="integer",
        unit="GPUs",
        level="design",
        mistakes=_separated(
            lambda g: _cheaper(g)[0],
            Mistake(lambda g: _cheaper(g)[1],
                    "that is the dearer of the two deployments; compare both and keep the cheaper"),
            Mistake(lambda g: _engine_budget(g["tpot_target_s"], g["peak_rps"], _cached(g))["gpus"],
                    "that is colocated at the engine's default budget, which stalls every student "
                    "beyond the TPOT target; compare at the stall-free budget"),
        ),
        hint="admission.when_it_pays(r, peak, isl, osl, ttft, tpot, cached) sizes both: the "
             "colocated fleet at its stall-free budget and the prefill and decode pools",
    ),
]
