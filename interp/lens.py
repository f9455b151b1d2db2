"""Lenses: read every layer's residual stream out through the model's own final norm and
unembedding (the logit lens), or through a fitted affine translator first (the tuned-lens form,
which :mod:`analyses.lens` fits to a wind tunnel's exact posterior: the Bayes lens).

A lens reads the rows that :func:`interp.capture` returns for :func:`lens_sites`: the
embeddings entering block 0 (``resid_pre.0``, depth 0) and each block's output
(``resid_post.L``, depth L + 1), [N, D] each. :class:`Readout` is the model's own final norm
(a frozen float32 copy of the module itself, so LayerNorm, RMSNorm and any family's variant
behave exactly as in the forward pass) followed by the unembedding restricted to the token ids
of interest (``ids``: K hypothesis tokens, or the whole vocabulary). Restricting before the
softmax is exact: a softmax over K gathered logits is the model's distribution over those
tokens renormalised. :func:`check_readout` holds the readout of the last block's output to the
model's own logits, so a model whose logits are more than norm + unembedding (a soft cap, a
logit scale) is refused rather than read wrongly.

A translator (:class:`Translator`) maps h -> h + h Aᵀ + b, A [D, D] and b [D] starting at zero
(the logit lens). :func:`fit_translator` fits one by full-batch L-BFGS to minimise the mean
KL(target ‖ lens) in bits over the rows, plus ``l2`` ‖A‖²_F: deterministic (no random start,
no minibatches).

Hand-written here, not taken from a package: the ``tuned-lens`` package is not installable
offline, and it fits translators to the model's final distribution over the whole vocabulary;
TransformerLens 4's ``tools.analysis.logit_lens`` reads a ``TransformerBridge``'s cache, which
the wind tunnels' own model types (the LSTM, the MLP, the Llama variants) do not boot into.
This module reads any model the hook backend locates, and fits to any target distribution over
K tokens (the exact posterior, or the model's final output).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from ..infotheory import kl_bits
from .capture import capture
from .errors import InterpError
from .model import InterpModel
from .norm_freeze import final_norm_module
from .positions import PositionSpec
from .prompts import Prompts
from .sites import resolve_layers, site_name

#: the largest |readout − model logit| accepted, relative to the largest |logit| (float32
#: rounding of the same arithmetic is ~1e-6; a skipped soft cap or scale is O(1))
READOUT_RTOL = {torch.float32: 1e-4, torch.float64: 1e-8}
#: the same for half-precision models (the readout is float32, the model's head is not)
READOUT_RTOL_HALF = 2e-2


def lens_sites(model: InterpModel, layers: Sequence[int] | None = None) -> list[str]:
    """The sites a lens reads, in depth order: ``resid_pre.0`` (the embeddings, depth 0), then
    ``resid_post.L`` for each of ``layers`` (default every layer; depth L + 1).

    Example:
        >>> import transformers
        >>> cfg = transformers.GPT2Config(n_layer=3, n_head=2, n_embd=16, vocab_size=11)
        >>> lens_sites(InterpModel(transformers.GPT2LMHeadModel(cfg)), [-1, 0])
        ['resid_pre.0', 'resid_post.0', 'resid_post.2']
    """
    chosen = resolve_layers(layers, model.n_layers)
    return [site_name("resid_pre", 0), *(site_name("resid_post", L) for L in chosen)]


def site_depth(site: str) -> int:
    """Depth of a lens site: 0 for ``resid_pre.0``, L + 1 for ``resid_post.L``.

    Example:
        >>> site_depth("resid_pre.0"), site_depth("resid_post.5")
        (0, 6)
    """
    kind, _, layer = site.rpartition(".")
    if kind == "resid_pre" and layer == "0":
        return 0
    if kind == "resid_post" and layer.isdigit():
        return int(layer) + 1
    raise InterpError(f"{site!r} is not a lens site (resid_pre.0 or resid_post.L)")


class Readout(nn.Module):
    """The model's own final norm and unembedding rows ``ids`` (module doc): [N, D] float32
    rows -> [N, K] float32 logits. No parameter of it is trained (all are copies, frozen)."""

    weight: torch.Tensor
    bias: torch.Tensor | None

    def __init__(self, norm: nn.Module, weight: torch.Tensor, bias: torch.Tensor | None,
                 ids: torch.Tensor | None):
        super().__init__()
        self.norm = norm
        self.register_buffer("weight", weight)
        self.register_buffer("bias", bias)
        self.ids = ids

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        y = self.norm(h.float()[:, None, :])
        y = (y[0] if isinstance(y, tuple) else y)[:, 0, :].float()
        z = y @ self.weight.T
        return z if self.bias is None else z + self.bias


def readout(model: InterpModel, ids: Sequence[int] | torch.Tensor | None = None) -> Readout:
    """The :class:`Readout` of ``model`` over token ``ids`` (None: the whole vocabulary).

    Example:
        >>> import torch, transformers
        >>> cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=11)
        >>> m = InterpModel(transformers.GPT2LMHeadModel(cfg))
        >>> readout(m, [3, 5])(torch.randn(4, 16)).shape
        torch.Size([4, 2])
    """
    norm = copy.deepcopy(final_norm_module(model)).float().requires_grad_(False)
    head = model.modules.lm_head(model.resolve_sites("logits")[0])
    weight = getattr(head, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.ndim != 2:
        raise InterpError(f"{model.info.name}: its LM head ({type(head).__name__}) has no [V, D] "
                          "weight to read the residual stream out with")
    bias = getattr(head, "bias", None)
    idx = None if ids is None else torch.as_tensor(ids, dtype=torch.long).reshape(-1)
    w = weight.detach() if idx is None else weight.detach()[idx.to(weight.device)]
    b = None if not isinstance(bias, torch.Tensor) else (
        bias.detach() if idx is None else bias.detach()[idx.to(bias.device)])
    return Readout(norm.cpu(), w.float().cpu().clone(),
                   None if b is None else b.float().cpu().clone(), idx)


def check_readout(model: InterpModel, prompts: Prompts, ro: Readout) -> float:
    """Max |readout(last block's output) − model logits| over ``prompts``' last tokens, on
    ``ro``'s ids; raises :class:`InterpError` beyond :data:`READOUT_RTOL` of the largest
    |logit| (the model's logits are then not its final norm and unembedding alone)."""
    last = site_name("resid_post", model.n_layers - 1)
    st = capture(model, prompts, [last, "logits"], "last", batch_size=len(prompts),
                 progress=False, entropy=False)
    want = st["logits"].float()
    want = want if ro.ids is None else want[:, ro.ids]
    with torch.no_grad():
        got = ro(st[last])
    diff = float((got - want).abs().max())
    dtype = next(model.hf.parameters()).dtype
    tol = READOUT_RTOL.get(dtype, READOUT_RTOL_HALF) * max(1.0, float(want.abs().max()))
    if not diff <= tol:
        raise InterpError(f"{model.info.name}: its final norm and unembedding applied to "
                          f"{last} miss its own logits by {diff:.3g} (tolerance {tol:.3g}); its "
                          "logits hold more than norm + unembedding (a soft cap or scale), "
                          "which a lens here does not reproduce")
    return diff


def read_residuals(model: InterpModel, prompts: Prompts, positions: PositionSpec = "last",
                   layers: Sequence[int] | None = None, *, batch_size: int = 8,
                   progress: bool = False, seed: int = 0) -> dict[str, torch.Tensor]:
    """The lens sites' rows (:func:`lens_sites`: site -> [N, D] float32) of ``prompts`` at
    ``positions`` through :func:`interp.capture` (prompt-major, then position order), plus
    ``"prompt_index"`` and ``"position"`` [N]."""
    sites = lens_sites(model, layers)
    st = capture(model, prompts, sites, positions, batch_size=batch_size, progress=progress,
                 seed=seed, entropy=False)
    out = {s: st[s].float() for s in sites}
    out["prompt_index"], out["position"] = st.prompt_index, st.position
    return out


@dataclass(frozen=True)
class LogitLens:
    """:func:`logit_lens`' reading: ``sites`` [S] (depth order), ``log_probs`` [S, N, K]
    natural log-probabilities over ``ids`` (K; the vocabulary when None), ``prompt_index`` and
    ``position`` [N] of each row."""

    sites: list[str]
    log_probs: torch.Tensor
    ids: torch.Tensor | None
    prompt_index: torch.Tensor
    position: torch.Tensor


def logit_lens(model: InterpModel, prompts: Prompts, ids: Sequence[int] | None = None,
               positions: PositionSpec = "last", layers: Sequence[int] | None = None, *,
               batch_size: int = 8, progress: bool = False) -> LogitLens:
    """The logit lens of ``model`` on ``prompts``: the residual stream at every depth
    (:func:`lens_sites`) at ``positions``, read out by the model's own final norm and
    unembedding over token ``ids`` (None: the whole vocabulary, [S, N, V] in memory), after
    :func:`check_readout` on the first prompts. At the last depth it is the model's output.

    Example:
        >>> import torch, transformers
        >>> cfg = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=11)
        >>> m = InterpModel(transformers.GPT2LMHeadModel(cfg))
        >>> ll = logit_lens(m, [[1, 2, 3], [4, 5]], ids=[0, 7])
        >>> ll.sites, list(ll.log_probs.shape)
        (['resid_pre.0', 'resid_post.0', 'resid_post.1'], [3, 2, 2])
        >>> own = torch.log_softmax(m.logits([[1, 2, 3], [4, 5]])[:, [0, 7]], -1)
        >>> torch.allclose(ll.log_probs[-1], own, atol=1e-5)
        True
    """
    tokens, _ = model.encode(prompts)
    ro = readout(model, ids)
    check_readout(model, tokens[:4], ro)
    rows = read_residuals(model, tokens, positions, layers, batch_size=batch_size,
                          progress=progress)
    sites = lens_sites(model, layers)
    return LogitLens(sites, torch.stack([lens_log_probs(rows[s], ro) for s in sites]), ro.ids,
                     rows["prompt_index"], rows["position"])


def lens_log_probs(h: torch.Tensor, ro: Readout, translator: Translator | None = None,
                   ) -> torch.Tensor:
    """Natural log-probabilities [N, K] of the lens over ``ro``'s ids, from rows ``h``
    [N, D]: the logit lens, or through ``translator`` first (no gradients)."""
    with torch.no_grad():
        x = h.float() if translator is None else translator(h.float())
        return torch.log_softmax(ro(x), dim=-1)


class Translator(nn.Module):
    """h -> h + h Aᵀ + b (A [D, D], b [D], both zero at the start: the logit lens)."""

    def __init__(self, d: int):
        super().__init__()
        self.A = nn.Parameter(torch.zeros(d, d))
        self.b = nn.Parameter(torch.zeros(d))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + h @ self.A.T + self.b


@dataclass(frozen=True)
class Fit:
    """A fitted translator, its training loss (mean KL(target ‖ lens), bits) before and after,
    and the L-BFGS iterations run."""

    translator: Translator
    kl_start_bits: float
    kl_bits: float
    iterations: int


def fit_translator(h: torch.Tensor, target: torch.Tensor, ro: Readout, *, steps: int = 100,
                   l2: float = 0.0) -> Fit:
    """Fit a :class:`Translator` on rows ``h`` [N, D] to ``target`` [N, K] probabilities over
    ``ro``'s ids: minimise mean KL(target ‖ softmax(ro(translator(h)))) (bits) + ``l2`` ‖A‖²_F
    by full-batch L-BFGS (strong-Wolfe line search, at most ``steps`` iterations). With fewer
    rows than dimensions A is fitted in the rows' span, which the fit in full A never leaves
    (N/D of the work).

    Example (a target that a translator can reach but the readout alone cannot):
        >>> import torch, transformers
        >>> cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=5,
        ...                               initializer_range=0.5)
        >>> _ = torch.manual_seed(0)
        >>> ro = readout(InterpModel(transformers.GPT2LMHeadModel(cfg)), [0, 1, 2])
        >>> h = torch.randn(64, 8)
        >>> target = torch.softmax(ro(h + h @ torch.randn(8, 8).T), -1)
        >>> fit = fit_translator(h, target, ro, steps=50)
        >>> fit.kl_bits < 0.1 * fit.kl_start_bits
        True
    """
    if steps < 1 or l2 < 0:
        raise InterpError(f"fit_translator needs steps >= 1 and l2 >= 0, got {steps}, {l2}")
    x = h.detach().float()
    p = target.detach().float()
    if x.ndim != 2 or p.shape != (x.shape[0], ro.weight.shape[0]):
        raise InterpError(f"rows {list(x.shape)} and target {list(p.shape)} do not fit a "
                          f"readout over {ro.weight.shape[0]} tokens")
    n, d = x.shape
    # the loss reads A only through x Aᵀ, and L-BFGS from zero moves A only along its
    # gradients, whose rows lie in x's row space: with fewer rows than dimensions, A = B Vᵀ
    # (V [D, N] orthonormal, from the thin SVD of x) searches the same translators at N/D of
    # the work (the iterates differ a little: L-BFGS scales its first step by an L1 norm)
    v = torch.linalg.svd(x, full_matrices=False).Vh.T if n < d else None
    xv = x if v is None else x @ v
    B = nn.Parameter(torch.zeros(d, xv.shape[1]))
    b = nn.Parameter(torch.zeros(d))

    def kl() -> torch.Tensor:
        return kl_bits(p, log_q=torch.log_softmax(ro(x + xv @ B.T + b), dim=-1)).mean()

    with torch.no_grad():
        start = float(kl())
    opt = torch.optim.LBFGS([B, b], lr=1.0, max_iter=steps, history_size=20,
                            line_search_fn="strong_wolfe", tolerance_grad=1e-9,
                            tolerance_change=1e-12)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = kl() + l2 * B.pow(2).sum()  # ‖B Vᵀ‖_F = ‖B‖_F: V has orthonormal columns
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        end = float(kl())
        tr = Translator(d)
        tr.A.copy_(B if v is None else B @ v.T)
        tr.b.copy_(b)
    iters = int(opt.state[B].get("n_iter", 0))
    return Fit(tr.requires_grad_(False), start, end, iters)
