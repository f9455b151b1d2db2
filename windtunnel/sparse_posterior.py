"""Exact posteriors over large hypothesis spaces without a dense V-sized array per position.

A :class:`SparsePosterior` holds, for each sequence b and supervised position q, the posterior
over H hypotheses as a *background* times a prior plus a short *support* list:

* off the support, ``p(h) = base[b, q] * prior(h)`` (``prior`` [H] float64 summing to 1, or
  ``None`` for the uniform 1/H, which then needs no H-sized array at all);
* on the support, ``p(h) = support_prob[b, q, j]`` for ``h = support[b, j]`` (0 when
  ``support_prob`` is None: the support then lists *eliminated* hypotheses);
* position q uses the first ``n_support[b, q]`` entries of row b's support (a *prefix*: the
  values revealed so far, for bijection), skipping holes (-1); entries of a prefix are distinct;
* ``delta[b, q] >= 0`` overrides all of that with a point mass on that hypothesis.

Bijection without noise is "uniform over the V - k values not yet revealed": its support is the
row's revealed values in order, ``n_support = k``, ``base = H / (H - k)``; memory is O(L) per
sequence instead of the dense O(L·V). Entropy, the Bayes maximum, and the calibration terms
against a model's log-probabilities are computed from this form in closed form
(:func:`calibration_terms`); the largest arrays they touch are the model's own [B, Q, H] values
and [B, Q, S] gathers of them at the support, never a float64 [B, Q, H] posterior.

Example:
    >>> import torch
    >>> sp = SparsePosterior(base=torch.tensor([[1.0, 4 / 3]], dtype=torch.float64),
    ...                      support=torch.tensor([[2, 0]]), n_support=torch.tensor([[0, 1]]),
    ...                      n_hypotheses=4)
    >>> sp.to_dense()[0, 1].tolist()   # value 2 revealed: uniform over the other three
    [0.3333333333333333, 0.3333333333333333, 0.0, 0.3333333333333333]
    >>> [round(float(x), 4) for x in sp.entropy_bits()[0]]
    [2.0, 1.585]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

LN2 = math.log(2.0)
#: rows of a [B, Q, H] model array processed at once by the terms that need one elementwise
CHUNK_ELEMENTS = 1 << 24


def _xlogx(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x > 0, x * torch.log(torch.where(x > 0, x, torch.ones_like(x))),
                       torch.zeros_like(x))


@dataclass(frozen=True)
class SparsePosterior:
    """The exact posterior [B, Q, H] in sparse form (see the module docstring). Shapes:
    ``base`` [B, Q] float64; ``support`` [B, S] int64 (-1 = hole); ``n_support`` [B, Q] int64;
    ``support_prob`` [B, Q, S] float64 or None; ``delta`` [B, Q] int64 (-1 = none) or None;
    ``prior`` [H] float64 or None (uniform). S >= 1 (pad with a hole)."""

    base: torch.Tensor
    support: torch.Tensor
    n_support: torch.Tensor
    n_hypotheses: int
    support_prob: torch.Tensor | None = None
    delta: torch.Tensor | None = None
    prior: torch.Tensor | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        b, q = self.base.shape
        return int(b), int(q), int(self.n_hypotheses)

    def to(self, device: torch.device | str) -> SparsePosterior:
        def mv(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x.to(device)

        return SparsePosterior(self.base.to(device), self.support.to(device),
                               self.n_support.to(device), self.n_hypotheses,
                               mv(self.support_prob), mv(self.delta), mv(self.prior))

    # ------------------------------------------------------------------ pieces
    def _valid(self) -> torch.Tensor:
        """[B, Q, S] bool: entry j of row b's support belongs to position q."""
        j = torch.arange(self.support.shape[1], device=self.support.device)
        return (j < self.n_support[..., None]) & (self.support[:, None, :] >= 0)

    def _prior_at(self, idx: torch.Tensor) -> torch.Tensor:
        """prior(idx) float64 for hypothesis indices (holes read as index 0)."""
        if self.prior is None:
            return torch.full(idx.shape, 1.0 / self.n_hypotheses, dtype=torch.float64,
                              device=idx.device)
        return self.prior[idx.clamp_min(0)]

    def _prefix(self, per_entry: torch.Tensor) -> torch.Tensor:
        """Σ over each position's support prefix of a per-entry value [B, S] -> [B, Q]."""
        x = torch.where(self.support >= 0, per_entry, torch.zeros_like(per_entry))
        cum = torch.cat([torch.zeros_like(x[:, :1]), x.cumsum(1)], 1)
        return cum.gather(1, self.n_support)

    def _deltas(self) -> torch.Tensor:
        return (self.delta if self.delta is not None
                else torch.full_like(self.n_support, -1))

    def _prior_neg_entropy(self) -> float:
        """Σ_h prior(h) ln prior(h) (nats)."""
        if self.prior is None:
            return -math.log(self.n_hypotheses)
        return float(_xlogx(self.prior).sum())

    # ------------------------------------------------------------- quantities
    def entropy_bits(self) -> torch.Tensor:
        """Entropy [B, Q] in bits, float64, in closed form: no [B, Q, H] array."""
        b = self.base
        pi_s = self._prior_at(self.support)
        off_mass = 1.0 - self._prefix(pi_s)
        off_xlogx = self._prior_neg_entropy() - self._prefix(_xlogx(pi_s))
        h = -(b * off_xlogx + _xlogx(b) * off_mass)
        if self.support_prob is not None:
            h = h - torch.where(self._valid(), _xlogx(self.support_prob), 0.0).sum(-1)
        h = torch.where(self._deltas() >= 0, 0.0, h)
        return h / LN2 + 0.0

    def to_dense(self) -> torch.Tensor:
        """The dense posterior [B, Q, H] float64 (for small H and tests)."""
        B, Q, H = self.shape
        pr = (self.prior if self.prior is not None
              else torch.full((H,), 1.0 / H, dtype=torch.float64, device=self.base.device))
        out = self.base[..., None] * pr
        valid = self._valid()
        idx = self.support.clamp_min(0)[:, None, :].expand(B, Q, -1)
        vals = (self.support_prob if self.support_prob is not None
                else torch.zeros(idx.shape, dtype=torch.float64, device=out.device))
        out = _scatter_valid(out, idx, vals, valid)
        d = self._deltas()
        hit = d >= 0
        if hit.any():
            out[hit] = 0.0
            out[hit, d[hit]] = 1.0
        return out

    def select(self, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Dense posteriors [n, H] float64 at the (row, position) pairs ``(rows[i], q[i])``."""
        r, qq = torch.as_tensor(rows), torch.as_tensor(q)
        sub = SparsePosterior(
            self.base[r, qq][:, None], self.support[r], self.n_support[r, qq][:, None],
            self.n_hypotheses,
            None if self.support_prob is None else self.support_prob[r, qq][:, None],
            None if self.delta is None else self.delta[r, qq][:, None], self.prior)
        return sub.to_dense()[:, 0].cpu().numpy()

    def prob_of(self, h: torch.Tensor) -> torch.Tensor:
        """p(h[b, q]) [B, Q] float64 for one hypothesis index per position."""
        on = self._valid() & (self.support[:, None, :] == h[..., None])
        on_p = (torch.where(on, self.support_prob, 0.0).sum(-1)
                if self.support_prob is not None else torch.zeros_like(self.base))
        p = torch.where(on.any(-1), on_p, self.base * self._prior_at(h))
        d = self._deltas()
        return torch.where(d >= 0, (d == h).double(), p)

    def top(self, rtol: float = 1e-12) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(argmax, max, unique)`` [B, Q]: the Bayes MAP hypothesis (one of them when tied),
        its probability, and whether no other hypothesis is within a relative ``rtol`` of it.
        Without support probabilities (eliminated hypotheses) nothing [B, Q, S] is built."""
        B, Q, _ = self.shape
        n_on = self._prefix(torch.ones_like(self.support, dtype=torch.float64)).long()
        o1, o2, o_arg, o_count = self._off_top(n_on)
        if self.support_prob is not None:
            sp = torch.where(self._valid(), self.support_prob, -1.0)
            s_max, s_arg = sp.max(-1)
            s_idx = self.support.gather(1, s_arg)
        else:
            s_max = torch.full((B, Q), -1.0, dtype=torch.float64, device=self.base.device)
            s_idx = torch.zeros_like(n_on)
        best = torch.maximum(s_max, o1)
        thr = best * (1.0 - rtol)
        ties = torch.where(o1 >= thr, o_count, 0) + torch.where((o2 >= thr) & (o2 >= 0), 1, 0)
        if self.support_prob is not None:
            ties = ties + (sp >= thr[..., None]).sum(-1)
        arg = torch.where(s_max >= o1, s_idx, o_arg)
        d = self._deltas()
        hit = d >= 0
        return (torch.where(hit, d, arg), torch.where(hit, 1.0, best),
                torch.where(hit, True, ties == 1))

    def _off_top(self, n_on: torch.Tensor):
        """Largest and second-largest off-support probability [B, Q], the index of the
        largest, and how many hypotheses share the largest (uniform prior: all of them)."""
        B, Q, H = self.shape
        n_off = H - n_on
        if self.prior is None:
            v = torch.where(n_off > 0, self.base / H, -1.0)
            # one hypothesis off the support: its index is the sum of all minus the support's
            total = H * (H - 1) // 2 - self._prefix(self.support)
            return v, torch.full_like(v, -1.0), total, n_off
        pr = self.prior.cpu().numpy()
        order = np.argsort(-pr, kind="stable")
        o1 = np.full((B, Q), -1.0)
        o2 = np.full((B, Q), -1.0)
        arg = np.zeros((B, Q), dtype=np.int64)
        sup, n, base = (self.support.cpu().numpy(), self.n_support.cpu().numpy(),
                        self.base.cpu().numpy())
        for b in range(B):
            for q in range(Q):
                s = sup[b, : n[b, q]]
                s = s[s >= 0]
                cand = order[: s.size + 2]
                cand = cand[~np.isin(cand, s)][:2]
                if cand.size:
                    arg[b, q], o1[b, q] = cand[0], base[b, q] * pr[cand[0]]
                if cand.size > 1:
                    o2[b, q] = base[b, q] * pr[cand[1]]
        dev = self.base.device
        return (torch.from_numpy(o1).to(dev), torch.from_numpy(o2).to(dev),
                torch.from_numpy(arg).to(dev), torch.ones(B, Q, dtype=torch.long, device=dev))


def _scatter_valid(out: torch.Tensor, idx: torch.Tensor, vals: torch.Tensor,
                   valid: torch.Tensor) -> torch.Tensor:
    """``out[b, q, idx[b, q, j]] = vals[b, q, j]`` where ``valid``."""
    b, q, j = torch.nonzero(valid, as_tuple=True)
    out[b, q, idx[b, q, j]] = vals[b, q, j]
    return out


def _row_sums(logp: torch.Tensor, fn) -> torch.Tensor:
    """Σ_h fn(logp rows, their flat indices) over [B, Q, H] in row chunks of about
    :data:`CHUNK_ELEMENTS` elements (bounded temporaries) -> [B, Q] float64."""
    B, Q, H = logp.shape
    flat = logp.reshape(B * Q, H)
    step = max(1, CHUNK_ELEMENTS // max(H, 1))
    out = [fn(flat[i:i + step], torch.arange(i, min(i + step, B * Q), device=logp.device))
           .sum(-1).double() for i in range(0, B * Q, step)]
    return torch.cat(out).reshape(B, Q)


def calibration_terms(logp: torch.Tensor, sp: SparsePosterior, clip: float,
                      rtol: float) -> dict[str, torch.Tensor]:
    """Calibration of model log-probabilities ``logp`` [B, Q, H] (natural, float32) against a
    sparse exact posterior, each [B, Q] float64: ``h_bayes`` (bits), ``kl_bayes_model`` and
    ``kl_model_bayes`` (bits; the Bayes posterior floored at ``clip`` in the latter), ``tvd``,
    ``bayes_argmax`` and ``unique`` (no other hypothesis within a relative ``rtol`` of the
    maximum). Equal to the dense formulas of :mod:`windtunnel.metrics` on the dense posterior.

    Example:
        >>> import torch
        >>> sp = SparsePosterior(torch.tensor([[4 / 3]], dtype=torch.float64),
        ...                      torch.tensor([[1]]), torch.tensor([[1]]), 4)
        >>> logp = torch.log(torch.tensor([[[0.25, 0.25, 0.25, 0.25]]]))
        >>> round(float(calibration_terms(logp, sp, 1e-12, 1e-12)["kl_bayes_model"]), 4)
        0.415
    """
    B, Q, H = sp.shape
    valid = sp._valid()
    idx = sp.support.clamp_min(0)[:, None, :].expand(B, Q, -1)
    lq_s = torch.where(valid, logp.gather(-1, idx).double(), 0.0)  # [B, Q, S]
    q_s = torch.where(valid, lq_s.exp(), 0.0)
    pi_s = sp._prior_at(sp.support)[:, None, :]
    has_p = sp.support_prob is not None
    b = sp.base
    bflat = b.reshape(-1)
    lclip = math.log(clip)
    if sp.prior is None:
        all_pi_lq = logp.mean(-1).double()
        log_pi_s = torch.full_like(pi_s, -math.log(H))
    else:
        all_pi_lq = (logp @ sp.prior.to(logp.dtype)).double()
        log_pi_s = torch.log(pi_s)
    h_nats = sp.entropy_bits() * LN2
    cross = b * (all_pi_lq - (pi_s * lq_s).sum(-1))
    if has_p:
        p_s = torch.where(valid, sp.support_prob, 0.0)  # type: ignore[arg-type]
        cross = cross + (p_s * lq_s).sum(-1)
    kl_bm = -h_nats - cross

    qlogq = _row_sums(logp, lambda lp, r: lp.exp() * lp)
    logb = torch.log(b)
    if sp.prior is None:
        off_all = torch.clamp_min(logb - math.log(H), lclip)
        tvd_all = _row_sums(logp, lambda lp, r: (bflat[r, None].to(lp.dtype) / H
                                                 - lp.exp()).abs())
    else:
        lpi = torch.log(sp.prior).to(logp.dtype)
        pr = sp.prior.to(logp.dtype)
        lbf = logb.reshape(-1).to(logp.dtype)
        off_all = _row_sums(logp, lambda lp, r: lp.exp() * torch.clamp_min(
            lbf[r, None] + lpi, lclip))
        tvd_all = _row_sums(logp, lambda lp, r: (bflat[r, None].to(lp.dtype) * pr
                                                 - lp.exp()).abs())
    # the support's own terms replace the background's there (q_s = 0 off the prefix)
    on_s = torch.log(p_s.clamp_min(clip)) if has_p else lclip
    qlogp = off_all + (q_s * (on_s - torch.clamp_min(logb[..., None] + log_pi_s, lclip))
                       ).sum(-1)
    kl_mb = qlogq - qlogp
    p_on = p_s if has_p else 0.0
    tvd = 0.5 * (tvd_all + torch.where(valid, (p_on - q_s).abs()
                                       - (b[..., None] * pi_s - q_s).abs(), 0.0).sum(-1))

    d = sp._deltas()
    hit = d >= 0
    lqd = logp.gather(-1, d.clamp_min(0)[..., None])[..., 0].double()
    qd = lqd.exp()
    kl_bm = torch.where(hit, -lqd, kl_bm)
    kl_mb = torch.where(hit, qlogq - (1.0 - qd) * lclip, kl_mb)
    tvd = torch.where(hit, 1.0 - qd, tvd)
    arg, _, unique = sp.top(rtol)
    return {"h_bayes": h_nats / LN2, "kl_bayes_model": kl_bm / LN2,
            "kl_model_bayes": kl_mb / LN2, "tvd": tvd, "bayes_argmax": arg, "unique": unique}
