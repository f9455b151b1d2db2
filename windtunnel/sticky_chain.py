"""The sticky Markov chain of Paper II (spec §2.3): data, its entropy floor, and two models.

**Chain.** n = 8 symbols. :func:`transition_matrix` builds P the way the authors' code does:
per row, weight 0.3 on the diagonal and 1/circular-distance off it; the row is normalised to
mass 0.7, then 0.3 is *added* on the diagonal (and the row renormalised, a no-op). Because the
0.3 on the diagonal is still in the row when it is scaled to 0.7, the effective
self-transition is 0.3 + 0.7 · 0.3/4.2167 = **0.3498**, not 0.3. Row 0 =
[0.3498, 0.1660, 0.0830, 0.0553, 0.0415, 0.0553, 0.0830, 0.1660].

**Floor.** H_min = the *unweighted* mean over rows of H(P[i, :]) = **1.8292 nats** (2.639
bits): the authors' floor (not the stationary-weighted entropy rate; P is doubly stochastic by
symmetry, so the two agree here).

**Sequence** (:func:`make_sequence`). Symbol means μ ∈ R^{8×20}, N(0, I), drawn from a torch
generator seeded with 0 (the authors' ``torch.manual_seed(0)``). A torch generator seeded with
the run's ``seed`` then draws, in the authors' order: the start symbol (uniform), y_1..y_{T−1}
(one ``torch.multinomial`` per step), and the noise N(0, I₂₀) [T−1, 20]. Inputs x_t =
μ_{y_{t−1}} + noise_t, targets y_t: T − 1 = 1999 positions for T = 2000. A CPU
``torch.Generator`` seeded with s gives the same draws as the global ``torch.manual_seed(s)``
the authors call, so these are their sequences; the deep variant's test sequence uses seed +
10000 (:data:`TEST_SEED_OFFSET`) as theirs does. These seeds are torch generators, not
:mod:`windtunnel.seeds` streams, so the sequences match the authors' code.

**Models.** :class:`SingleHeadAttention` (820 parameters; init N(0, 0.1²) from a generator
seeded with the run's seed, drawn W_Q, W_K, W_V, W_O in that order, as the authors re-seed
before initialising) and :class:`DeepStickyTransformer` (the ``--deep`` variant: a Hugging
Face ``GPTNeoXModel`` fed with ``inputs_embeds``, rotary fraction 0, so no position signal at
all, like the authors' hand-written blocks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from transformers import GPTNeoXConfig, GPTNeoXModel

from ..infotheory.measures import entropy_bits_from_probs
from .architectures import n_params as n_params  # the one parameter count, re-exported
from .names import STICKY_SEEDS as SEEDS  # noqa: F401 (the authors' seeds, re-exported)

N_SYMBOLS = 8
D_X, D_K, D_V = 20, 10, 15
SELF_PROB = 0.3
SEQ_LEN = 2000
EMBED_SEED = 0
INIT_STD = 0.1
#: the deep variant's held-out sequence is drawn with seed + this
TEST_SEED_OFFSET = 10000


def transition_matrix(n: int = N_SYMBOLS, self_prob: float = SELF_PROB) -> torch.Tensor:
    """P [n, n] (float32, rows sum to 1), built as the authors' code builds it (module doc)."""
    idx = torch.arange(n)
    dist = (idx[:, None] - idx[None, :]).abs()
    dist = torch.minimum(dist, n - dist).float()
    w = torch.where(dist == 0, torch.tensor(self_prob), 1.0 / dist.clamp(min=1))
    p = w / w.sum(dim=1, keepdim=True) * (1 - self_prob) + torch.eye(n) * self_prob
    return p / p.sum(dim=1, keepdim=True)


def floor_nats(p: torch.Tensor | None = None) -> float:
    """H_min: unweighted mean over rows of the row entropies of ``p`` (nats; default P)."""
    p = transition_matrix() if p is None else p
    return float(entropy_bits_from_probs(p.double()).mean()) * math.log(2)


def symbol_means(d_x: int = D_X, n: int = N_SYMBOLS) -> torch.Tensor:
    """μ [n, d_x]: N(0, I), from a generator seeded with :data:`EMBED_SEED`."""
    return torch.randn(n, d_x, generator=torch.Generator().manual_seed(EMBED_SEED))


@dataclass(frozen=True, eq=False)
class StickySequence:
    """One chain: ``states`` [T] symbols y_0..y_{T−1}; ``inputs`` [T−1, d_x] float32 (x_t =
    μ_{y_{t−1}} + noise); ``targets`` [T−1] int64 (y_t); ``seed`` the generator's seed."""

    seed: int
    states: torch.Tensor
    inputs: torch.Tensor
    targets: torch.Tensor


def make_sequence(seed: int, length: int = SEQ_LEN) -> StickySequence:
    """The authors' sequence for ``seed`` (module doc): ``length`` states, length − 1 rows."""
    if length < 2:
        raise ValueError(f"a sequence needs at least 2 states, got {length}")
    p, mu = transition_matrix(), symbol_means()
    g = torch.Generator().manual_seed(int(seed))
    seq = [int(torch.randint(N_SYMBOLS, (1,), generator=g).item())]
    for _ in range(length - 1):
        seq.append(int(torch.multinomial(p[seq[-1]], 1, generator=g).item()))
    states = torch.tensor(seq)
    noise = torch.randn(length - 1, mu.shape[1], generator=g)
    return StickySequence(int(seed), states, mu[states[:-1]] + noise, states[1:].clone())


# ---------------------------------------------------------------- the 820-parameter head
class SingleHeadAttention(nn.Module):
    """One causal softmax head over the whole sequence, no bias, no norm (spec §2.3).

    ``W_Q``, ``W_K`` [d_x, d_k]; ``W_V`` [d_x, d_v]; ``W_O`` [d_v, n]. For x [T, d_x]:
    α = softmax_causal(x W_Q (x W_K)ᵀ / √d_k) [T, T]; logits = (α x W_V) W_O [T, n].
    """

    def __init__(self, seed: int, d_x: int = D_X, d_k: int = D_K, d_v: int = D_V,
                 n: int = N_SYMBOLS):
        super().__init__()
        g = torch.Generator().manual_seed(int(seed))
        shapes = {"W_Q": (d_x, d_k), "W_K": (d_x, d_k), "W_V": (d_x, d_v), "W_O": (d_v, n)}
        for name, shape in shapes.items():  # the authors' draw order
            setattr(self, name, nn.Parameter(torch.randn(*shape, generator=g) * INIT_STD))

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """α [T, T]: row i is query i's causal softmax over keys j ≤ i."""
        s = (x @ self.W_Q) @ (x @ self.W_K).T / math.sqrt(self.W_Q.shape[1])
        t = x.shape[0]
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        return torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits [T, n], α [T, T]) for x [T, d_x]."""
        alpha = self.attention(x)
        return (alpha @ (x @ self.W_V)) @ self.W_O, alpha


# ---------------------------------------------------------------- the deep variant
DEEP_D_MODEL, DEEP_LAYERS, DEEP_HEADS, DEEP_FFN, DEEP_DROPOUT = 64, 4, 4, 256, 0.1


class DeepStickyTransformer(nn.Module):
    """The ``--deep`` model: Linear(d_x → 64), a Hugging Face ``GPTNeoXModel`` (4 pre-LN
    blocks, sequential residual, 4 heads, d 64, FFN 256 GELU, attention and hidden dropout
    0.1, final LayerNorm, rotary fraction 0: no position signal) fed ``inputs_embeds``, and
    Linear(64 → n). The body's 1-row token table is never used; it holds
    :data:`UNUSED_PARAMS` of the total, the rest (201,928) matches the authors' model
    parameter for parameter in count. Differences from theirs: Hugging Face initialisation
    (N(0, 0.02²)), and dropout also on the block input and after the attention output.
    x [T, d_x] or [B, T, d_x] -> logits of the same leading shape with n last."""

    def __init__(self, d_x: int = D_X, n: int = N_SYMBOLS):
        super().__init__()
        cfg = GPTNeoXConfig(
            vocab_size=1, hidden_size=DEEP_D_MODEL, num_hidden_layers=DEEP_LAYERS,
            num_attention_heads=DEEP_HEADS, intermediate_size=DEEP_FFN, hidden_act="gelu",
            rotary_pct=0.0, attention_dropout=DEEP_DROPOUT, hidden_dropout=DEEP_DROPOUT,
            use_parallel_residual=False, max_position_embeddings=4096, attention_bias=True,
            bos_token_id=None, eos_token_id=None, pad_token_id=None)
        self.input_proj = nn.Linear(d_x, DEEP_D_MODEL)
        self.body = GPTNeoXModel(cfg)
        self.head = nn.Linear(DEEP_D_MODEL, n)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batched = x.dim() == 3
        h = self.body(inputs_embeds=self.input_proj(x if batched else x[None])).last_hidden_state
        out = self.head(h)
        return out if batched else out[0]


#: parameters of the deep body's unused one-row token table (vocab 1 × d 64), which
#: :func:`n_params` counts
UNUSED_PARAMS = DEEP_D_MODEL
