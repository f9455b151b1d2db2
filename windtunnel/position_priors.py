"""Additive positional priors on the attention scores of the Llama-style wind tunnel: ALiBi and
BAM (Bianchessi et al., "Bayesian Attention Mechanism", arXiv 2505.22842; spec §4), with the
optional SSMax scaling.

Per head h = 1..H (ALiBi's convention; array index h − 1) and distance d = i − j ≥ 0 from the
query at position i back to the key at position j, a bias B_h(d) is added to the scores
s_ij = c · q_iᵀk_j (c = 1/√d_head), so that α_i = softmax_j(s_ij + B_h(i − j)): by BAM's
Theorem 1, softmax(B_h) over the visible distances is a prior over relative position.

* ALiBi (``position_scheme="alibi"``): B_h(d) = −m_h · d, m_h = 2^(−8h/H), for every H (ALiBi's
  own code interleaves slopes of the next power of two when H is not one; this does not).
* BAM (``"bam"``, a generalised-Gaussian prior): B_h(d) = −exp(θα_h) · (|d − μ_h| + ε)^θβ_h
  with μ_h = 2 sinh(θμ_h) and ε = 1e-5 (μ > 0 centres the prior μ tokens back: the README's
  sign; the authors' code uses j − i and so the opposite sign of μ). θα and θβ are learned
  and initialised at 0 (BAM starts as NoPE); θμ is fixed at 0 unless ``bam_learn_mu``. One
  prior per layer by default, one shared by all layers with ``bam_shared``. θβ = 0 is NoPE,
  θβ = 1 with θα_h = log m_h and μ = 0 is ALiBi (Laplace prior), θβ = 2 a Gaussian prior.
  The model adds B_h(d) + exp(θα_h) ε^θβ_h, a per-head constant that no softmax sees, so that
  θβ = 0 adds exactly 0 and reproduces NoPE bit for bit (:func:`bam_bias`, ``offset``).
* SSMax (``ssmax``, any scheme): scores (s_ij + B_h(d)) · σ_h log n_i, with n_i the number of
  keys query i sees and σ_h a learned per-layer, per-head factor initialised at 1 (the
  authors' ``bam_ssmax``). The kernel is given q_i σ_h log n_i and the scaled bias, so what
  it computes, and what gradient taps read as its scores, is exactly that.

:class:`PriorAttention` (a subclass of HF's ``ArceeAttention``) folds the bias into a per-head
additive float mask [B, H, T, Tk] (masked entries at the dtype's lowest value) before calling
the configured attention function, so ``eager``, ``sdpa`` and ``interp``'s gradient taps
(which call the eager kernel with this mask plus a zero probe) all see the prior. Keys are
the cache's slots, contiguous positions ending at the last query: distance = slot difference,
which is i − j without a cache, with HF's ``DynamicCache`` (chunked evaluation) and with left
padding (pads are masked); a cache whose slots are not that (static, sliding) is refused.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.arcee import modeling_arcee

# the gradient taps (interp.attention_taps) call ``eager_attention_forward`` of the attention
# module's own modeling file, looked up in ``type(module).__module__``: here, HF's Arcee kernel
from transformers.models.arcee.modeling_arcee import ArceeAttention, eager_attention_forward

#: the schemes with an additive prior on the scores
PRIOR_SCHEMES = ("alibi", "bam")
#: BAM's ε: keeps (|d − μ| + ε)^θβ and its θβ-gradient (a factor log(|d − μ| + ε)) finite at d = μ
BAM_EPS = 1e-5
_REFUSED_KERNELS = ("flash", "flex")


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's slopes m_h = 2^(−8h/H) for heads h = 1..H, float64 [H].

    Example:
        >>> alibi_slopes(4).tolist()
        [0.25, 0.0625, 0.015625, 0.00390625]
    """
    h = torch.arange(1, n_heads + 1, dtype=torch.float64)
    return torch.exp2(-8.0 * h / n_heads)


def alibi_bias(distance: torch.Tensor, n_heads: int) -> torch.Tensor:
    """ALiBi's bias −m_h · d [H, *distance.shape] (distance in tokens, dtype kept).

    Example:
        >>> alibi_bias(torch.tensor([0.0, 1.0, 2.0]), 2).tolist()
        [[-0.0, -0.0625, -0.125], [-0.0, -0.00390625, -0.0078125]]
    """
    m = alibi_slopes(n_heads).to(distance.device, distance.dtype)
    return -m.view(-1, *[1] * distance.ndim) * distance


def bam_bias(distance: torch.Tensor, theta_alpha: torch.Tensor, theta_beta: torch.Tensor,
             theta_mu: torch.Tensor, offset: bool = False) -> torch.Tensor:
    """BAM's bias B_h(d) = −exp(θα_h) · (|d − μ_h| + ε)^θβ_h, μ_h = 2 sinh(θμ_h), ε = 1e-5,
    [H, *distance.shape], from θα, θβ, θμ [H] and distances d = i − j (tokens). With
    ``offset`` the per-head constant exp(θα_h) ε^θβ_h is added (what the model adds: 0 at
    d = μ_h, so θβ = 0 gives exactly 0); the attention is the same either way.

    Example:
        >>> z = torch.zeros(1)
        >>> bam_bias(torch.tensor([0.0, 1.0, 2.0]), z, torch.ones(1), z, offset=True)
        tensor([[-0., -1., -2.]])
        >>> bam_bias(torch.tensor([0.0, 3.0]), z, z, z)  # θβ = 0: a constant, NoPE
        tensor([[-1., -1.]])
    """
    shape = (-1, *[1] * distance.ndim)
    mu = (2 * torch.sinh(theta_mu)).view(shape)
    beta = theta_beta.view(shape)
    powered = ((distance - mu).abs() + BAM_EPS).pow(beta)
    if offset:
        powered = powered - torch.full_like(beta, BAM_EPS).pow(beta)  # same rounding as d = μ
    return -torch.exp(theta_alpha).view(shape) * powered


class PositionPrior(nn.Module):
    """One BAM prior: ``theta_alpha``, ``theta_beta`` [H] parameters (initialised at 0), and
    ``theta_mu`` [H] (0; a parameter with ``learn_mu``, else a buffer); ``forward(distance)``
    gives the bias the model adds, [H, *distance.shape] (:func:`bam_bias` with ``offset``)."""

    def __init__(self, n_heads: int, learn_mu: bool = False):
        super().__init__()
        self.theta_alpha = nn.Parameter(torch.zeros(n_heads))
        self.theta_beta = nn.Parameter(torch.zeros(n_heads))
        if learn_mu:
            self.theta_mu = nn.Parameter(torch.zeros(n_heads))
        else:
            self.register_buffer("theta_mu", torch.zeros(n_heads))

    def forward(self, distance: torch.Tensor) -> torch.Tensor:
        return bam_bias(distance.to(self.theta_alpha.dtype), self.theta_alpha,
                        self.theta_beta, self.theta_mu, offset=True)


def key_distances(n_queries: int, n_keys: int, device: torch.device | None = None,
                  dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Distances i − j [T, Tk] of the last T of Tk contiguous positions to all Tk (negative:
    future keys, masked).

    Example:
        >>> key_distances(2, 3).tolist()
        [[1.0, 0.0, -1.0], [2.0, 1.0, 0.0]]
    """
    i = torch.arange(n_keys - n_queries, n_keys, device=device, dtype=dtype)
    return i[:, None] - torch.arange(n_keys, device=device, dtype=dtype)[None, :]


def _visible(mask: torch.Tensor | None, T: int, Tk: int, device: torch.device,
             ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The keys each query sees, bool [B or 1, 1, T, Tk], and the float mask's own additive
    values (None for a boolean or absent mask)."""
    if mask is None:
        return (key_distances(T, Tk, device) >= 0)[None, None], None
    if not isinstance(mask, torch.Tensor) or mask.shape[-1] < Tk or mask.shape[-2] != T:
        raise ValueError(f"positional priors need a [B, 1, {T}, >={Tk}] attention mask, got "
                         f"{getattr(mask, 'shape', type(mask).__name__)}")
    mask = mask[..., :Tk]
    if mask.dtype == torch.bool:
        return mask, None
    return mask > torch.finfo(mask.dtype).min / 2, mask


class PriorAttention(ArceeAttention):
    """``ArceeAttention`` whose kernel gets the additive mask causal/padding + prior [B, H, T,
    Tk] (and, with SSMax, scaled queries). Built from an existing ``ArceeAttention``, whose
    projections it takes over; ``prior`` is the layer's own BAM prior (registered), or None
    (ALiBi, NoPE, or a shared prior given by :meth:`share_prior`)."""

    def __init__(self, base: ArceeAttention, scheme: str, prior: PositionPrior | None = None,
                 ssmax: bool = False):
        nn.Module.__init__(self)
        for name in ("config", "layer_idx", "head_dim", "num_key_value_groups", "scaling",
                     "attention_dropout", "is_causal"):
            setattr(self, name, getattr(base, name))
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            self.add_module(name, getattr(base, name))
        self.scheme = scheme
        self.n_heads = self.config.num_attention_heads
        self.prior = prior
        self._shared: PositionPrior | None = None  # not a submodule: the model owns it
        self.ssmax_scale = nn.Parameter(torch.ones(self.n_heads)) if ssmax else None

    def share_prior(self, prior: PositionPrior) -> None:
        """Use ``prior`` (owned and saved by the model, not by this layer)."""
        self.__dict__["_shared"] = prior

    @property
    def position_prior(self) -> PositionPrior | None:
        """This layer's BAM prior, its own or the shared one (None for other schemes)."""
        return self.prior if self.prior is not None else self.__dict__.get("_shared")

    def bias(self, distance: torch.Tensor) -> torch.Tensor | None:
        """The bias this layer adds, [H, *distance.shape], before SSMax; None for no prior."""
        if self.scheme == "alibi":
            return alibi_bias(distance, self.n_heads)
        prior = self.position_prior
        return None if prior is None else prior(distance)

    def forward(  # type: ignore[override]
        self,
        hidden_states: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        attention_mask: torch.Tensor | None = None,
        past_key_values: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        impl = self.config._attn_implementation or "eager"
        if any(k in impl for k in _REFUSED_KERNELS):
            raise ValueError(f"position scheme {self.scheme!r} needs an attention kernel that "
                             f"takes an additive float mask (eager, sdpa), not {impl!r}")
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        cos, sin = position_embeddings  # type: ignore[misc]
        query, key = modeling_arcee.apply_rotary_pos_emb(query, key, cos, sin)
        if past_key_values is not None:
            key, value = past_key_values.update(key, value, self.layer_idx)
        T, Tk = query.shape[-2], key.shape[-2]
        if past_key_values is not None and past_key_values.get_seq_length(self.layer_idx) != Tk:
            raise ValueError("positional priors need a cache whose slots are the positions "
                             "seen so far (DynamicCache), not a static or sliding one")
        allowed, base = _visible(attention_mask, T, Tk, query.device)
        factor = None if self.ssmax_scale is None else self.ssmax_factor(allowed, query.dtype)
        if factor is not None:
            query = query * factor
        mask = self.prior_mask(allowed, base, factor, query.dtype)
        interface = ALL_ATTENTION_FUNCTIONS.get_interface(impl, eager_attention_forward)
        out, weights = interface(self, query, key, value, mask,
                                 dropout=0.0 if not self.training else self.attention_dropout,
                                 scaling=self.scaling, **kwargs)
        return self.o_proj(out.reshape(*input_shape, -1).contiguous()), weights

    def ssmax_factor(self, allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """σ_h log n_i [B or 1, H, T, 1] from the visible keys ``allowed`` [B or 1, 1, T, Tk]
        (n_i ≥ 1: fully masked pad rows get 0)."""
        if self.ssmax_scale is None:
            raise ValueError("this layer has no SSMax (the config's ssmax is off)")
        n = allowed.sum(-1, keepdim=True).clamp(min=1).to(dtype)
        return self.ssmax_scale.to(dtype).view(1, -1, 1, 1) * torch.log(n)

    def prior_mask(self, allowed: torch.Tensor, base: torch.Tensor | None,
                   factor: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor:
        """The additive float mask [B or 1, H, T, Tk] the kernel gets: where a key is visible
        (``allowed``), the float mask's own value (``base``) + the prior (times the SSMax
        ``factor``); elsewhere float32's lowest value (a float32 softmax of a fully masked row
        stays finite whatever the model's dtype)."""
        T, Tk = allowed.shape[-2:]
        device = allowed.device
        bias = self.bias(key_distances(T, Tk, device, torch.float64))
        add = torch.zeros((), dtype=dtype, device=device)
        if bias is not None:
            add = bias.to(dtype)[None]
            if factor is not None:
                add = add * factor
        if base is not None:
            add = base.to(dtype) + add
        low = torch.full((), max(torch.finfo(dtype).min, torch.finfo(torch.float32).min),
                         dtype=dtype, device=device)
        return torch.where(allowed, add, low).expand(allowed.shape[0], self.n_heads, T, Tk)
