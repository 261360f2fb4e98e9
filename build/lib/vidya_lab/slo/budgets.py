"""Where a target comes from: a TTFT budget split into its parts, and a TPOT from reading speed.

:func:`latency_budget` splits a TTFT target into network, prefill and what is left for queueing;
:func:`tpot_for_reading_speed` turns a reading speed into the TPOT that keeps text ahead of the
reader (the constants :data:`READING_WORDS_PER_MIN` and :data:`TOKENS_PER_WORD` carry their sources).
"""

from __future__ import annotations

from dataclasses import dataclass

from vidya_lab._validate import check_real


@dataclass(frozen=True)
class LatencyBudget:
    """A TTFT target split into its parts (seconds). ``queueing_s < 0`` means over budget."""

    ttft_target_s: float
    network_s: float
    prefill_s: float
    queueing_s: float

    @property
    def feasible(self) -> bool:
        """True when network and prefill leave time (≥ 0) for queueing."""
        return self.queueing_s >= 0


def latency_budget(ttft_target_s: float, *, prefill_s: float, network_s: float) -> LatencyBudget:
    """Split a TTFT target: ``queueing = TTFT target − network − prefill`` (seconds).

    ``network_s`` is the round trip the user's request and first token spend on the wire;
    ``prefill_s`` the time the server computes the prompt. What is left is the most a request may
    wait in the queue; if negative, no queueing policy can meet the target.
    """
    target = check_real("ttft_target_s", ttft_target_s, minimum=0.0, min_inclusive=False)
    pre = check_real("prefill_s", prefill_s, minimum=0.0)
    net = check_real("network_s", network_s, minimum=0.0)
    return LatencyBudget(target, net, pre, target - net - pre)


#: Mean silent reading rate of adults reading English non-fiction, words per minute
#: (Brysbaert, 2019, a meta-analysis of 190 studies: 238 wpm for non-fiction, 260 for fiction).
READING_WORDS_PER_MIN = 238.0

#: Tokens per English word for GPT-style BPE tokenizers: "1 token ≈ ¾ of a word", so 4/3
#: (OpenAI Help Center, "What are tokens and how to count them?"), for English text; words of other
#: scripts are often split into more tokens: measure it on your own traffic.
TOKENS_PER_WORD = 4.0 / 3.0


def tpot_for_reading_speed(words_per_min: float, tokens_per_word: float,
                           headroom: float = 1.0) -> float:
    """The TPOT (seconds per token) at which text streams ``headroom``× as fast as a person reads.

    ``TPOT = 60 / (words_per_min × tokens_per_word × headroom)``. A TPOT at or below this keeps the
    text ahead of the reader; above it the reader waits for each word. ``headroom > 1`` leaves room for
    skimming and for the tail of the TPOT distribution.
    """
    wpm = check_real("words_per_min", words_per_min, minimum=0.0, min_inclusive=False)
    tpw = check_real("tokens_per_word", tokens_per_word, minimum=0.0, min_inclusive=False)
    h = check_real("headroom", headroom, minimum=0.0, min_inclusive=False)
    return 60.0 / (wpm * tpw * h)
