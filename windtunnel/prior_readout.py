"""Read the positional priors of a Llama-style wind tunnel out, per layer and head: BAM's
parameters, the bias over distances 0..D and the prior over distance it implies.

Every additive scheme is read as BAM parameters (:mod:`windtunnel.position_priors`): BAM its
own θα, θβ, μ = 2 sinh(θμ); ALiBi θα_h = log m_h, θβ = 1, μ = 0; NoPE θα = θβ = 0 (uniform).
``bias`` is BAM's B_h(d) = −exp(θα_h) (|d − μ_h| + ε)^θβ_h (the model adds it plus a per-head
constant, which changes no softmax). ``prior`` is what the bias alone implies for a query that
sees D + 1 keys at distances 0..D: softmax over d of B_h(d) (times σ_h log(D + 1) with SSMax).
A shared prior appears under every layer (``shared``). Learned tables and RoPE are not additive
priors (BAM's Theorem 1 does not cover RoPE) and are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .position_priors import PriorAttention, alibi_slopes, bam_bias
from .task import TaskConfigError


@dataclass(frozen=True)
class PriorReadout:
    """Per layer (L) and head (H): ``theta_alpha``, ``theta_beta``, ``mu`` [L, H] (tokens for
    μ), ``scale`` = exp(θα) [L, H], ``ssmax_scale`` σ [L, H] (ones without SSMax), and over
    ``distances`` 0..D [D + 1]: ``bias`` B_h(d) [L, H, D + 1] (score units) and ``prior``
    [L, H, D + 1] (rows sum to 1)."""

    scheme: str
    shared: bool
    ssmax: bool
    theta_alpha: np.ndarray
    theta_beta: np.ndarray
    mu: np.ndarray
    ssmax_scale: np.ndarray
    distances: np.ndarray
    bias: np.ndarray
    prior: np.ndarray

    @property
    def scale(self) -> np.ndarray:
        """exp(θα) [L, H]: ALiBi's slope when θβ = 1."""
        return np.exp(self.theta_alpha)

    def params_frame(self) -> pd.DataFrame:
        """One row per (layer, head): theta_alpha, theta_beta, mu, scale, ssmax_scale, and
        ``prior_mode`` (the most probable distance, tokens) and ``prior_mean`` (tokens)."""
        L, H = self.theta_alpha.shape
        mean = (self.prior * self.distances).sum(-1)
        return pd.DataFrame({
            "layer": np.repeat(np.arange(L), H), "head": np.tile(np.arange(H), L),
            "theta_alpha": self.theta_alpha.ravel(), "theta_beta": self.theta_beta.ravel(),
            "mu": self.mu.ravel(), "scale": self.scale.ravel(),
            "ssmax_scale": self.ssmax_scale.ravel(),
            "prior_mode": self.distances[self.prior.argmax(-1)].ravel(),
            "prior_mean": mean.ravel(),
        })

    def frame(self) -> pd.DataFrame:
        """Long form: one row per (layer, head, distance) with ``bias`` and ``prior``."""
        L, H, n = self.bias.shape
        return pd.DataFrame({
            "layer": np.repeat(np.arange(L), H * n),
            "head": np.tile(np.repeat(np.arange(H), n), L),
            "distance": np.tile(self.distances, L * H),
            "bias": self.bias.ravel(), "prior": self.prior.ravel(),
        })


def read_priors(model: torch.nn.Module, max_distance: int = 64) -> PriorReadout:
    """The positional prior of every layer and head of a Llama-style wind tunnel
    (``position_scheme`` alibi, bam or nope) over distances 0..``max_distance`` (tokens).

    Example:
        >>> from bayesgeom.windtunnel import make_task
        >>> from bayesgeom.windtunnel.architectures import build_model
        >>> r = read_priors(build_model(make_task("bijection", V=6), "llama-alibi", "tiny"), 4)
        >>> r.scale[0].round(8).tolist(), r.theta_beta[0].tolist()  # m_h = 2^(-8h/H), H = 2
        ([0.0625, 0.00390625], [1.0, 1.0])
        >>> r.bias[0, 0].round(4).tolist()  # -m_1 (d + ε)
        [-0.0, -0.0625, -0.125, -0.1875, -0.25]
        >>> bool(np.allclose(r.prior.sum(-1), 1))
        True
    """
    cfg = getattr(model, "config", None)
    scheme = getattr(cfg, "position_scheme", None)
    if scheme not in ("alibi", "bam", "nope"):
        raise TaskConfigError(f"read_priors needs a Llama-style wind tunnel with an additive "
                              f"prior (alibi, bam, nope), not position scheme {scheme!r}")
    if max_distance < 0:
        raise TaskConfigError(f"max_distance must be >= 0, got {max_distance}")
    layers = [layer.self_attn for layer in model.model.layers]  # type: ignore[union-attr]
    H = cfg.num_attention_heads  # type: ignore[union-attr]
    d = torch.arange(max_distance + 1, dtype=torch.float64)
    rows: dict[str, list[torch.Tensor]] = {k: [] for k in ("a", "b", "m", "s")}
    for attn in layers:
        prior = attn.position_prior if isinstance(attn, PriorAttention) else None
        if scheme == "bam" and prior is not None:
            a, b, m = (prior.theta_alpha, prior.theta_beta, prior.theta_mu)
        elif scheme == "alibi":
            a, b, m = alibi_slopes(H).log(), torch.ones(H), torch.zeros(H)
        else:
            a, b, m = torch.zeros(H), torch.zeros(H), torch.zeros(H)
        s = getattr(attn, "ssmax_scale", None)
        for key, t in zip("abms", (a, b, m, torch.ones(H) if s is None else s), strict=True):
            rows[key].append(t.detach().double().cpu())
    alpha, beta, theta_mu, sigma = (torch.stack(rows[k]) for k in "abms")  # [L, H]
    bias = torch.stack([bam_bias(d, alpha[i], beta[i], theta_mu[i]) for i in range(len(layers))])
    factor = sigma * np.log(max_distance + 1) if cfg.ssmax else torch.ones_like(sigma)
    prior_p = torch.softmax(bias * factor[..., None], dim=-1)
    return PriorReadout(
        scheme=scheme, shared=bool(getattr(cfg, "bam_shared", False)), ssmax=bool(cfg.ssmax),
        theta_alpha=alpha.numpy(), theta_beta=beta.numpy(),
        mu=(2 * torch.sinh(theta_mu)).numpy(), ssmax_scale=sigma.numpy(),
        distances=d.numpy(), bias=bias.numpy(), prior=prior_p.numpy())
