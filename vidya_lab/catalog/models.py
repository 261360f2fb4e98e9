"""Models: a decoder-only transformer's shape from its published ``config.json``.

Parameter counts are *computed* from the shape (:meth:`Model.total_params`,
:meth:`Model.active_params_per_token`) and tested against the counts the model cards publish.
"""

from __future__ import annotations

from dataclasses import dataclass

from vidya_lab import _validate as v

#: Architectures the parameter formulas know.
ARCHS = ("llama", "opt")
#: Largest layer count, width or vocabulary a Model may state (guards against typos such as 1e12).
MAX_DIMENSION = 10_000_000


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's shape, from its published ``config.json``.

    Attributes
    ----------
    n_layers, d_model, n_heads (query heads), n_kv_heads, head_dim, d_ff (per expert),
    vocab_size, max_context_tokens : as in the config (``num_hidden_layers``, ``hidden_size``,
        ``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``/``ffn_dim``, ...).
    arch : "llama" (gated SwiGLU MLP, RMSNorm, no biases, rotary positions) or
        "opt" (two-matrix ReLU MLP, LayerNorm, biases, learned positions).
    tied_embeddings : whether the output head reuses the input embedding matrix.
    n_experts, experts_per_token : 1 and 1 for a dense model; 8 and 2 for Mixtral-8x7B (routed
        experts: ``n_routed_experts``/``num_local_experts``/``num_experts``, ``num_experts_per_tok``).
    n_shared_experts : experts every token uses besides the routed ones (DeepSeek-V3: 1).
    n_dense_layers, dense_d_ff : leading layers with one dense MLP of width ``dense_d_ff``
        (DeepSeek-V3: ``first_k_dense_replace`` 3, ``intermediate_size`` 18432).
    q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim : multi-head latent
        attention (MLA, DeepSeek-V2/V3); ``kv_lora_rank`` 0 means ordinary (grouped-query) attention.
        An MLA layer caches one latent of ``kv_lora_rank`` plus one shared rope key of
        ``qk_rope_head_dim`` per token, not K and V per head.
    sliding_window, n_sliding_layers : ``n_sliding_layers`` of the layers attend only to the last
        ``sliding_window`` tokens (gpt-oss: ``layer_types`` alternating, ``sliding_window`` 128), so
        their cache holds at most that many tokens of a sequence. 0 and 0: every layer is global.
    published_params : the parameter count the model card or checkpoint states (for the tests).
    source : where the shape comes from.
    """

    id: str
    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    max_context_tokens: int
    arch: str
    tied_embeddings: bool
    source: str
    published_params: float
    n_experts: int = 1
    experts_per_token: int = 1
    n_shared_experts: int = 0
    n_dense_layers: int = 0
    dense_d_ff: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    n_sliding_layers: int = 0

    def __post_init__(self) -> None:
        for name in ("id", "name", "arch", "source"):
            v.check_str(name, getattr(self, name))
        v.check_choice("arch", self.arch, ARCHS)
        for name in ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff",
                     "vocab_size", "max_context_tokens", "n_experts", "experts_per_token"):
            v.check_int(name, getattr(self, name), minimum=1, maximum=MAX_DIMENSION)
        v.check_bool("tied_embeddings", self.tied_embeddings)
        v.check_real("published_params", self.published_params, minimum=0.0, min_inclusive=False)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads ({self.n_kv_heads}) must divide n_heads ({self.n_heads})")
        if self.experts_per_token > self.n_experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) must be <= n_experts "
                             f"({self.n_experts})")
        for name in ("n_shared_experts", "n_dense_layers", "dense_d_ff", "q_lora_rank",
                     "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                     "sliding_window", "n_sliding_layers"):
            v.check_int(name, getattr(self, name), minimum=0, maximum=MAX_DIMENSION)
        if self.n_dense_layers > self.n_layers or self.n_sliding_layers > self.n_layers:
            raise ValueError(f"n_dense_layers ({self.n_dense_layers}) and n_sliding_layers "
                             f"({self.n_sliding_layers}) must be <= n_layers ({self.n_layers})")
        if self.n_dense_layers and not self.dense_d_ff:
            raise ValueError("dense_d_ff must be > 0 when n_dense_layers > 0")
        if (self.sliding_window > 0) != (self.n_sliding_layers > 0):
            raise ValueError(f"sliding_window ({self.sliding_window}) and n_sliding_layers "
                             f"({self.n_sliding_layers}) must both be 0 or both be > 0")
        if self.is_mla and not (self.qk_nope_head_dim and self.qk_rope_head_dim and self.v_head_dim):
            raise ValueError("an MLA model (kv_lora_rank > 0) needs qk_nope_head_dim, "
                             "qk_rope_head_dim and v_head_dim > 0")

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (a compressed KV latent per layer)."""
        return self.kv_lora_rank > 0

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    # parameter counts, from the shape ------------------------------------------------------
    def attention_params_per_layer(self) -> int:
        """q, k, v, o projections (+ biases for OPT): d·(h·hd) + 2·d·(kv·hd) + (h·hd)·d.

        MLA (DeepSeek-V3's ``modeling_deepseek.py``): q_a d·r_q, its norm r_q, q_b r_q·h·(nope+rope);
        kv_a d·(r_kv+rope), its norm r_kv, kv_b r_kv·h·(nope+v); o h·v·d.
        """
        if self.is_mla:
            h, qk = self.n_heads, self.qk_nope_head_dim + self.qk_rope_head_dim
            q = (self.d_model * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * h * qk
                 if self.q_lora_rank else self.d_model * h * qk)
            kv = (self.d_model * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * h * (self.qk_nope_head_dim + self.v_head_dim))
            return q + kv + h * self.v_head_dim * self.d_model
        q = self.d_model * self.n_heads * self.head_dim
        kv = 2 * self.d_model * self.n_kv_heads * self.head_dim
        o = self.n_heads * self.head_dim * self.d_model
        bias = 0
        if self.arch == "opt":
            bias = self.n_heads * self.head_dim + 2 * self.n_kv_heads * self.head_dim + self.d_model
        return q + kv + o + bias

    def kv_projection_params_per_layer(self) -> int:
        """The k and v projections alone (they are replicated when tp > KV heads)."""
        if self.is_mla:  # the down-projection to the latent and the shared rope key
            return self.d_model * (self.kv_lora_rank + self.qk_rope_head_dim)
        bias = 2 * self.n_kv_heads * self.head_dim if self.arch == "opt" else 0
        return 2 * self.d_model * self.n_kv_heads * self.head_dim + bias

    def expert_params(self) -> int:
        """One MLP (one expert): 3·d·d_ff (gated) or 2·d·d_ff + biases (OPT)."""
        if self.arch == "opt":
            return 2 * self.d_model * self.d_ff + self.d_ff + self.d_model
        return 3 * self.d_model * self.d_ff

    def norm_params_per_layer(self) -> int:
        return 4 * self.d_model if self.arch == "opt" else 2 * self.d_model

    def router_params_per_layer(self) -> int:
        return self.d_model * self.n_experts if self.is_moe else 0

    def layer_params(self, *, active: bool = False, dense: bool = False) -> int:
        """Parameters of one transformer block; ``active`` counts only the experts a token uses
        (routed top-k plus shared); ``dense`` is one of the leading dense layers of width
        ``dense_d_ff`` (DeepSeek-V3's first three)."""
        base = self.attention_params_per_layer() + self.norm_params_per_layer()
        if dense:
            return base + 3 * self.d_model * self.dense_d_ff
        experts = (self.experts_per_token if active else self.n_experts) + self.n_shared_experts
        return base + experts * self.expert_params() + self.router_params_per_layer()

    def mean_layer_params(self, *, active: bool = False) -> float:
        """Parameters of an average block: the same as :meth:`layer_params` unless some leading
        layers are dense (DeepSeek-V3)."""
        if not self.n_dense_layers:
            return self.layer_params(active=active)
        return self._blocks_params(active=active) / self.n_layers

    def _blocks_params(self, *, active: bool) -> int:
        moe_layers = self.n_layers - self.n_dense_layers
        return (moe_layers * self.layer_params(active=active)
                + self.n_dense_layers * self.layer_params(dense=True))

    def embedding_params(self) -> int:
        """Input embedding (+ learned positions for OPT, whose table has 2 extra rows)."""
        pos = (self.max_context_tokens + 2) * self.d_model if self.arch == "opt" else 0
        return self.vocab_size * self.d_model + pos

    def lm_head_params(self) -> int:
        """Output head; 0 extra parameters when tied to the embedding."""
        return 0 if self.tied_embeddings else self.vocab_size * self.d_model

    def final_norm_params(self) -> int:
        return 2 * self.d_model if self.arch == "opt" else self.d_model

    def non_layer_params(self) -> int:
        return self.embedding_params() + self.lm_head_params() + self.final_norm_params()

    def total_params(self) -> int:
        """Every parameter stored (all experts): what memory must hold."""
        return self._blocks_params(active=False) + self.non_layer_params()

    def active_params_per_token(self) -> int:
        """Parameters one token's forward pass multiplies by (top-k experts only), excluding the
        input embedding, which is a look-up, not a matrix multiply."""
        head = self.vocab_size * self.d_model  # the output projection, tied or not
        return self._blocks_params(active=True) + head + self.final_norm_params()


_HF = "Hugging Face config.json of "
MODELS: dict[str, Model] = {
    m.id: m
    for m in (
        Model("llama-2-7b", "Llama-2-7B", 32, 4096, 32, 32, 128, 11008, 32000, 4096, "llama", False,
              _HF + "meta-llama/Llama-2-7b-hf", 6.74e9),
        Model("llama-2-13b", "Llama-2-13B", 40, 5120, 40, 40, 128, 13824, 32000, 4096, "llama", False,
              _HF + "meta-llama/Llama-2-13b-hf", 13.0e9),
        Model("llama-2-70b", "Llama-2-70B", 80, 8192, 64, 8, 128, 28672, 32000, 4096, "llama", False,
              _HF + "meta-llama/Llama-2-70b-hf", 69.0e9),
        Model("llama-3.1-8b", "Llama-3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256, 131072, "llama",
              False, _HF + "meta-llama/Llama-3.1-8B", 8.03e9),
        Model("llama-3.1-70b", "Llama-3.1-70B", 80, 8192, 64, 8, 128, 28672, 128256, 131072, "llama",
              False, _HF + "meta-llama/Llama-3.1-70B; facts.md (scaling-book applied-inference.md)",
              70.6e9),
        Model("llama-3.1-405b", "Llama-3.1-405B", 126, 16384, 128, 8, 128, 53248, 128256, 131072,
              "llama", False, _HF + "meta-llama/Llama-3.1-405B", 405.9e9),
        Model("llama-3.3-70b", "Llama-3.3-70B", 80, 8192, 64, 8, 128, 28672, 128256, 131072, "llama",
              False, _HF + "meta-llama/Llama-3.3-70B-Instruct (same shape as Llama-3.1-70B)", 70.6e9),
        Model("opt-13b", "OPT-13B", 40, 5120, 40, 40, 128, 20480, 50272, 2048, "opt", True,
              _HF + "facebook/opt-13b; KV size in facts.md (PagedAttention paper §3)", 12.9e9),
        Model("mixtral-8x7b", "Mixtral-8x7B", 32, 4096, 32, 8, 128, 14336, 32000, 32768, "llama",
              False, _HF + "mistralai/Mixtral-8x7B-v0.1 (num_local_experts 8, "
              "num_experts_per_tok 2); 46.7B total, 12.9B active per the model card", 46.7e9,
              n_experts=8, experts_per_token=2),
        Model("deepseek-v3", "DeepSeek-V3", 61, 7168, 128, 128, 192, 2048, 129280, 163840, "llama",
              False, _HF + "deepseek-ai/DeepSeek-V3 (num_hidden_layers 61, hidden_size 7168, "
              "num_attention_heads 128, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, "
              "qk_rope_head_dim 64, v_head_dim 128, n_routed_experts 256, n_shared_experts 1, "
              "num_experts_per_tok 8, moe_intermediate_size 2048, first_k_dense_replace 3, "
              "intermediate_size 18432, vocab_size 129280, max_position_embeddings 163840); "
              "671B total, 36.6B active (0.9B of it the head) per README_WEIGHTS.md; the MTP "
              "module (11.5B more) is not counted", 671e9, n_experts=256, experts_per_token=8,
              n_shared_experts=1, n_dense_layers=3, dense_d_ff=18432, q_lora_rank=1536,
              kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
        Model("gpt-oss-120b", "gpt-oss-120b", 36, 2880, 64, 8, 64, 2880, 201088, 131072, "llama",
              False, _HF + "openai/gpt-oss-120b (num_hidden_layers 36, hidden_size 2880, "
              "num_attention_heads 64, num_key_value_heads 8, head_dim 64, intermediate_size 2880, "
              "num_local_experts 128, num_experts_per_tok 4, vocab_size 201088, sliding_window 128, "
              "layer_types alternating sliding_attention/full_attention); 116.83B total, 5.13B "
              "active per the gpt-oss model card (arXiv:2508.10925); attention and expert biases "
              "and sinks (< 0.05%) are not counted", 116.83e9, n_experts=128, experts_per_token=4,
              sliding_window=128, n_sliding_layers=18),
        Model("qwen3-30b-a3b", "Qwen3-30B-A3B", 48, 2048, 32, 4, 128, 768, 151936, 40960, "llama",
              False, _HF + "Qwen/Qwen3-30B-A3B (num_hidden_layers 48, hidden_size 2048, "
              "num_attention_heads 32, num_key_value_heads 4, head_dim 128, moe_intermediate_size "
              "768, num_experts 128, num_experts_per_tok 8, vocab_size 151936, "
              "max_position_embeddings 40960); 30.5B total, 3.3B active per the model card",
              30.5e9, n_experts=128, experts_per_token=8),
        Model("qwen3-235b-a22b", "Qwen3-235B-A22B", 94, 4096, 64, 4, 128, 1536, 151936, 40960,
              "llama", False, _HF + "Qwen/Qwen3-235B-A22B (num_hidden_layers 94, hidden_size 4096, "
              "num_attention_heads 64, num_key_value_heads 4, head_dim 128, moe_intermediate_size "
              "1536, num_experts 128, num_experts_per_tok 8, vocab_size 151936); 235B total, 22B "
              "active per the model card", 235e9, n_experts=128, experts_per_token=8),
    )
}
