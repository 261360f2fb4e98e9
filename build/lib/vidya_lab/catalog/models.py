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
    n_experts, experts_per_token : 1 and 1 for a dense model; 8 and 2 for Mixtral-8x7B.
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

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 1

    # parameter counts, from the shape ------------------------------------------------------
    def attention_params_per_layer(self) -> int:
        """q, k, v, o projections (+ biases for OPT): d·(h·hd) + 2·d·(kv·hd) + (h·hd)·d."""
        q = self.d_model * self.n_heads * self.head_dim
        kv = 2 * self.d_model * self.n_kv_heads * self.head_dim
        o = self.n_heads * self.head_dim * self.d_model
        bias = 0
        if self.arch == "opt":
            bias = self.n_heads * self.head_dim + 2 * self.n_kv_heads * self.head_dim + self.d_model
        return q + kv + o + bias

    def kv_projection_params_per_layer(self) -> int:
        """The k and v projections alone (they are replicated when tp > KV heads)."""
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

    def layer_params(self, *, active: bool = False) -> int:
        """Parameters of one transformer block; ``active`` counts only the experts a token uses."""
        experts = self.experts_per_token if active else self.n_experts
        return (self.attention_params_per_layer() + experts * self.expert_params()
                + self.norm_params_per_layer() + self.router_params_per_layer())

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
        return self.n_layers * self.layer_params() + self.non_layer_params()

    def active_params_per_token(self) -> int:
        """Parameters one token's forward pass multiplies by (top-k experts only), excluding the
        input embedding, which is a look-up, not a matrix multiply."""
        head = self.vocab_size * self.d_model  # the output projection, tied or not
        return self.n_layers * self.layer_params(active=True) + head + self.final_norm_params()


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
    )
}
