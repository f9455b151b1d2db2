"""A batch of 820-parameter sticky-chain heads (:class:`windtunnel.sticky_chain.
SingleHeadAttention`) trained full batch at once, with hand-written gradients.

R runs (seeds, protocols' grid trials) are stacked along a leading batch dimension: W_Q, W_K
[R, d_x, d_k], W_V [R, d_x, d_v], W_O [R, d_v, n], the inputs X [R, T, d_x] float32, the
targets [R, T]. Each step computes, for every run, the loss (mean CE, nats) and the exact
gradients of the autograd loop (:mod:`analyses.dynamics.em_vs_sgd.reference`), then applies the
run's update (:class:`RunSettings`): plain gradient steps with a learning rate per matrix,
Adam (``torch.optim.Adam``'s formula), and optionally a closed-form M-step on W_V.

The T × T work runs over blocks of ``chunk`` query rows; a block of rows [a, b) needs only
keys j < b (causal), so about half of the T² pairs are touched, and a block's scores, α and
∂L/∂s ([R, C, b], two reused buffers) stay in cache. With Z = X W_V W_O [R, T, n] (so logits =
α Z), G = (softmax(logits) − e_y)/T [R, T, n] (∂L/∂logits) and s_ij = x_i W_Q W_Kᵀ x_jᵀ/√d_k,
per block:

* logits_b = α_b Z, then G_b (row-local: a block holds whole rows of α);
* Hᵀ += [G_b, 1]ᵀ α_b [R, n + 1, T]: H = αᵀ G, the per-key error sums, and α's column sums;
  ∂L/∂(W_V W_O) = Xᵀ H [R, d_x, n], so ∂L/∂W_V = Xᵀ H W_Oᵀ and ∂L/∂W_O = W_Vᵀ Xᵀ H;
* ∂L/∂s = α ⊙ (G Zᵀ − c) with c_i = Σ_j α_ij G_i·z_j = G_i · logits_i;
  Σ_b X_bᵀ (∂L/∂s)_b X = ∂L/∂(W_Q W_Kᵀ) · √d_k [R, d_x, d_x], hence ∂L/∂W_Q and ∂L/∂W_K.

Arranged so (measured on one core) the reductions over a block run along its C rows (Gᵀ α,
X_bᵀ ∂L/∂s), the fast layout for these skinny products. Float32 as the autograd loop, float64
for the M-step's solve; float32 denormals are flushed while training (:func:`flush_denormals`).

The M-step (``em_*`` protocols) is the least-squares solution of X W_V = V* with
V* = X W_V − η D [T, d_v]: W_V − η X⁺ D, X⁺ = (XᵀX)⁻¹Xᵀ precomputed once per sequence (float64;
X has full column rank). D_j is Σ_i w_ij ũ_i / Σ_i w_ij (``alpha``: w = α; ``uniform``: w_ij =
1/(i+1) for j ≤ i, the causal uniform attention, a reverse cumulative sum), or Σ_i α_ij ũ_i
(``unnorm``), with ũ_i = T · G_i W_Oᵀ each token's own error.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch

from ....windtunnel import sticky_chain as sc

#: query rows per block (fixed, so a run's numbers do not depend on the batch it ran in)
CHUNK = 128
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-8
M_STEPS = ("none", "alpha", "unnorm", "uniform")


@dataclass(frozen=True)
class RunSettings:
    """One run's update: ``optimizer`` "sgd" (p −= lr · g) or "adam" (``torch.optim.Adam``
    defaults but lr); learning rates per matrix; ``m_step`` one of :data:`M_STEPS` ("none":
    W_V takes its gradient step; else W_V is set by the M-step of step size ``eta``)."""

    optimizer: str
    lr_q: float
    lr_k: float
    lr_v: float
    lr_o: float
    m_step: str = "none"
    eta: float = 0.0

    def lrs(self) -> dict[str, float]:
        return {"W_Q": self.lr_q, "W_K": self.lr_k, "W_V": self.lr_v, "W_O": self.lr_o}


@dataclass
class BatchResult:
    """``losses`` [R, steps + 1] float64 (the loss after k = 0..steps updates); ``params``
    name -> [R, ...] float32 final matrices; ``final_logits`` [R, T, n] of the final model."""

    losses: np.ndarray
    params: dict[str, torch.Tensor]
    final_logits: torch.Tensor


def _causal_bias(c: int) -> torch.Tensor:
    return torch.zeros(c, c).masked_fill_(torch.ones(c, c, dtype=torch.bool).triu(1),
                                          float("-inf"))


def pinv_rows(x: torch.Tensor) -> torch.Tensor:
    """X⁺ = (XᵀX)⁻¹Xᵀ [..., d_x, T] float64 of x [..., T, d_x] (least squares' left inverse)."""
    return torch.linalg.pinv(x.double())


class HeadBatch:
    """R heads on R sequences of one length T; see the module doc. ``x`` [R, T, d_x] float32,
    ``y`` [R, T] int64; the heads start from :class:`sc.SingleHeadAttention` (seed of each)."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, init_seeds: list[int],
                 settings: list[RunSettings], chunk: int = CHUNK):
        kinds = {(s.optimizer, s.m_step) for s in settings}
        if len(kinds) != 1 or len(settings) != x.shape[0] != 0:
            raise ValueError("a batch holds runs of one optimizer and M-step, one per sequence")
        (self.optimizer, self.m_step), = kinds
        if self.m_step not in M_STEPS or self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"unknown update {self.optimizer}/{self.m_step}")
        self.x, self.y, self.chunk = x.float().contiguous(), y, chunk
        self.xt = self.x.mT.contiguous()
        self.r, self.t = x.shape[0], x.shape[1]
        heads = [sc.SingleHeadAttention(s) for s in init_seeds]
        self.w = {n: torch.stack([getattr(h, n).detach() for h in heads]).contiguous()
                  for n in ("W_Q", "W_K", "W_V", "W_O")}
        self.lr = {n: torch.tensor([s.lrs()[n] for s in settings]).view(-1, 1, 1)
                   for n in self.w}
        self.eta = torch.tensor([s.eta for s in settings], dtype=torch.float64).view(-1, 1, 1)
        self.onehot = torch.nn.functional.one_hot(y, sc.N_SYMBOLS).float()
        self.bias = _causal_bias(chunk)
        self.buffers = torch.empty(2, self.r * min(chunk, self.t) * self.t)
        self.pinv = pinv_rows(self.x) if self.m_step != "none" else None
        self.adam = ({n: (torch.zeros_like(w), torch.zeros_like(w)) for n, w in self.w.items()}
                     if self.optimizer == "adam" else None)
        self.k = 0  # updates done

    def _buffer(self, i: int, rows: int, cols: int) -> torch.Tensor:
        """A contiguous [R, rows, cols] view of work buffer ``i``: a block's scores, α and
        ∂L/∂s reuse two buffers instead of allocating (and page-faulting) each block."""
        return self.buffers[i, : self.r * rows * cols].view(self.r, rows, cols)

    # ------------------------------------------------------------ loss and gradients
    def loss_and_grads(self, grads: bool = True,
                       ) -> tuple[torch.Tensor, dict[str, torch.Tensor], torch.Tensor | None,
                                  torch.Tensor]:
        """(loss [R] float64, gradients name -> [R, ...], H [R, T, n + 1] or None, logits
        [R, T, n]) at the current parameters; ``grads=False``: the forward pass only."""
        w, x, r, t = self.w, self.x, self.r, self.t
        scale = 1.0 / math.sqrt(w["W_Q"].shape[-1])
        q = torch.bmm(x, w["W_Q"]).mul_(scale)
        kt = torch.bmm(x, w["W_K"]).mT.contiguous()
        wvo = torch.bmm(w["W_V"], w["W_O"])
        z = torch.bmm(x, wvo)
        n = wvo.shape[-1]
        zt = z.mT.contiguous()
        logits = torch.empty(r, t, n)
        nll = torch.zeros(r, dtype=torch.float64)
        g_m = torch.zeros(r, x.shape[-1], x.shape[-1])
        ht = torch.zeros(r, n + 1, t)  # Hᵀ = [G, 1]ᵀ α
        g_all = torch.empty(r, t, n) if grads else None
        ones = torch.ones(r, 1, self.chunk)
        for a in range(0, t, self.chunk):
            b = min(t, a + self.chunk)
            s = torch.bmm(q[:, a:b], kt[:, :, :b], out=self._buffer(0, b - a, b))
            s[:, :, a:b] += self.bias[: b - a, : b - a]
            al = torch._softmax(s, -1, False, out=self._buffer(1, b - a, b))
            lg = torch.bmm(al, z[:, :b])
            logits[:, a:b] = lg
            lsm = torch.log_softmax(lg, -1)
            nll -= (lsm * self.onehot[:, a:b]).sum((1, 2), dtype=torch.float64)
            if g_all is None:
                continue
            g = (lsm.exp_() - self.onehot[:, a:b]).div_(t)
            g_all[:, a:b] = g
            ht[:, :, :b] += torch.bmm(torch.cat([g.mT, ones[:, :, : b - a]], 1), al)
            c = (g * lg).sum(-1, keepdim=True)
            ds = torch.bmm(g, zt[:, :, :b], out=self._buffer(0, b - a, b)).sub_(c).mul_(al)
            g_m.baddbmm_(torch.bmm(self.xt[:, :, a:b], ds), x[:, :b])
        loss = nll / t
        if g_all is None:
            return loss, {}, None, logits
        g_vo = torch.bmm(self.xt, ht[:, :n].mT)
        gr = {"W_Q": torch.bmm(g_m, w["W_K"]).mul_(scale),
              "W_K": torch.bmm(g_m.mT, w["W_Q"]).mul_(scale),
              "W_V": torch.bmm(g_vo, w["W_O"].mT),
              "W_O": torch.bmm(w["W_V"].mT, g_vo)}
        return loss, gr, ht.mT, g_all

    # ------------------------------------------------------------ updates
    def m_step_values(self, h: torch.Tensor | None, g_all: torch.Tensor) -> torch.Tensor:
        """The M-step's new W_V [R, d_x, d_v] at the current parameters (module doc)."""
        w_o, t = self.w["W_O"], self.t
        n = w_o.shape[-1]
        if self.m_step == "uniform":
            u = torch.bmm(g_all, w_o.mT).mul_(t).double()  # ũ [R, T, d_v]
            inv = 1.0 / torch.arange(1, t + 1, dtype=torch.float64)
            wu = (u * inv[:, None]).flip(1).cumsum(1).flip(1)
            d = wu / inv.flip(0).cumsum(0).flip(0)[:, None]
        else:
            assert h is not None
            d = torch.bmm(h[..., :n], w_o.mT).mul_(t).double()
            if self.m_step == "alpha":
                d = d / h[..., n:].double()
        assert self.pinv is not None
        return (self.w["W_V"].double() - self.eta * torch.bmm(self.pinv, d)).float()

    def step(self) -> torch.Tensor:
        """One update of every run; the loss [R] before it."""
        loss, gr, h, g_all = self.loss_and_grads()
        new_v = self.m_step_values(h, g_all) if self.m_step != "none" else None
        self.k += 1
        for n, p in self.w.items():
            if self.adam is None:
                p.sub_(self.lr[n] * gr[n])
                continue
            m, v = self.adam[n]
            (b1, b2), k = ADAM_BETAS, self.k
            m.mul_(b1).add_(gr[n], alpha=1 - b1)
            v.mul_(b2).addcmul_(gr[n], gr[n], value=1 - b2)
            denom = (v.sqrt() / math.sqrt(1 - b2 ** k)).add_(ADAM_EPS)
            p.sub_(self.lr[n] / (1 - b1 ** k) * m / denom)
        if new_v is not None:
            self.w["W_V"] = new_v.contiguous()
        return loss


@contextmanager
def flush_denormals() -> Iterator[None]:
    """Flush float32 denormals (< 1.2e-38) to zero on this thread while inside, then restore
    the default. Once the scores spread (large learning rates, Adam), softmax rows hold
    entries below 1e-38, and arithmetic on denormals runs about 15× slower on x86 (measured:
    154 vs 10 ms a step); flushed, those entries change the loss by less than 1e-30."""
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def train_batch(seqs: list[sc.StickySequence], settings: list[RunSettings], steps: int,
                bar=None, chunk: int = CHUNK) -> BatchResult:
    """Train run i on ``seqs[i]`` (initialised from its seed) by ``settings[i]`` for ``steps``
    full-batch steps; every run in one call shares an optimizer and M-step kind. ``bar``: a
    tqdm bar advanced by R per step."""
    x = torch.stack([s.inputs for s in seqs])
    y = torch.stack([s.targets for s in seqs])
    batch = HeadBatch(x, y, [s.seed for s in seqs], settings, chunk)
    losses = np.empty((len(seqs), steps + 1))
    with torch.no_grad(), flush_denormals():
        for k in range(steps):
            losses[:, k] = batch.step().numpy()
            if bar is not None:
                bar.update(len(seqs))
        last, _, _, logits = batch.loss_and_grads(grads=False)
    losses[:, steps] = last.numpy()
    return BatchResult(losses, {n: p.clone() for n, p in batch.w.items()}, logits)
