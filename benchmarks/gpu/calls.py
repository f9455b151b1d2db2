"""The calls the correctness part runs on one model: each takes an :class:`interp.InterpModel`
(any device and dtype) and returns its results as named CPU float64 tensors, so the same call
on two devices can be compared entry by entry.

* :func:`capture_call` -- ``interp.capture`` of residual, attention and logit sites at every
  position of left-padded prompts (the eager pattern path included), with next-token entropy;
* :func:`edit_call` -- the logits at every real position under each of the three direction
  edits (cut: ``ProjectOut``, ``KeepOnly``, ``ShiftAlong``) at one site (the padding
  positions' logits are recorded apart, not judged: nothing reads them, and a fully masked
  attention row has no defined output -- CUDA's bfloat16 attention and the CPU's fill those
  rows differently, 2026-11-27);
* :func:`steer_call` -- steering's scoring pass (:class:`analyses.steer.passes.Runner`: the
  clean pass, an edited pass resumed from the edited layer with its norm-frozen and
  direct-path effects) and :func:`analyses.steer.scores.score` of each, with each score's
  conditioning (:func:`score_jitter`);
* :func:`taps_call` -- ``interp.attention_taps.attention_gradients`` (α, q, k, v, z and their
  autograd gradients, ∂L/∂s through the mask probe) of every layer;
* :func:`verify_call` -- ``dynamics verify``'s identity errors per identity (max over layers and
  heads) and its value-step gaps per ε.

Prompts are token-id lists of different lengths (9, 4, 7), so every call runs left padding.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from bayesgeom import interp

Outputs = dict[str, torch.Tensor]
#: the value-step sizes (fractions of the loss) of the verify call
EPSILONS = (1e-1, 1e-2)


def prompts(vocab: int, seed: int = 1, lengths: tuple[int, ...] = (9, 4, 7)) -> list[list[int]]:
    """Token-id prompts of ``lengths`` drawn from the first min(vocab, 12) ids (so wind-tunnel
    vocabularies are covered too)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, min(vocab, 12), (n,), generator=g).tolist() for n in lengths]


def _out(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to("cpu", torch.float64)


def has_attention(m: interp.InterpModel) -> bool:
    return m.modules.adapter.attention is not None


def edit_site(m: interp.InterpModel, layer: int = 0) -> str:
    """The site the edits write to: the values of ``layer`` (per kv head) where the model has
    attention, else its residual stream after ``layer``."""
    return f"attn.{layer}.v" if has_attention(m) else f"resid_post.{layer}"


def direction(m: interp.InterpModel, site: str, seed: int = 2) -> torch.Tensor:
    """A fixed random direction [F] (float32, CPU) for ``site``."""
    shape = m.feature_shape(m.resolve_sites(site)[0])
    g = torch.Generator().manual_seed(seed)
    return torch.randn(int(np.prod(shape)), generator=g)


def capture_call(m: interp.InterpModel, ps: list[list[int]]) -> Outputs:
    last = m.n_layers - 1
    sites = ["resid_pre.0", f"resid_post.{last}", "mlp_out.0", "logits"]
    if has_attention(m):
        sites += ["attn.0.q", "attn.0.k", "attn.0.v", f"attn.{last}.pattern", f"attn.{last}.z",
                  "attn_out.0", "final_norm.scale"]
    if m.modules.adapter.mlp is None:
        sites.remove("mlp_out.0")  # no MLP or mixer sublayer (the LSTM)
    st = interp.capture(m, ps, sites, positions="all", progress=False)
    out = {s: _out(st[s]) for s in sites}
    out["entropy_bits"] = _out(st["entropy_bits"])
    return out


def edit_call(m: interp.InterpModel, ps: list[list[int]]) -> Outputs:
    site = edit_site(m)
    u = direction(m, site)
    edits = {"project_out": interp.ProjectOut(site, u, fraction=1.0),
             "keep_only": interp.KeepOnly(site, u),
             "shift": interp.ShiftAlong(site, u, delta=3.0)}
    batch = m.batch(ps)
    real = batch.attention_mask.bool()  # [B, T]: False at the left padding
    out: Outputs = {}

    def put(name: str, logits: torch.Tensor) -> None:  # logits [B, T, V]
        z = _out(logits)
        out[f"{name}.logits"] = z[real]  # [real tokens, V]
        out[f"info.pad.{name}.logits"] = z[~real]  # [padding tokens, V]: recorded only

    put("clean", m.forward(batch))
    for name, iv in edits.items():
        with m.intervene(iv):
            put(name, m.forward(batch))
    return out


def _posterior_prompts(ps: list[list[int]], k: int = 3):
    from bayesgeom.windtunnel import PosteriorPrompts

    rng = np.random.default_rng(3)
    n = len(ps)
    return PosteriorPrompts(name="gpu-session", prompts=ps, bayes=rng.dirichlet(np.ones(k), n),
                            group=np.arange(n) % 2,
                            hyp_ids=np.tile(np.arange(1, k + 1), (n, 1)))


#: the seeded draws of :func:`score_jitter`
JITTER_DRAWS = 4


def rounding(m: interp.InterpModel) -> float:
    """The unit roundoff of the model's dtype (bfloat16: 2^-8 = 3.9e-3; float32: 2^-24)."""
    return float(torch.finfo(next(m.hf.parameters()).dtype).eps) / 2


def score_jitter(po, pp, ref, u: float) -> torch.Tensor:
    """Each score's conditioning [6]: the largest change over :data:`JITTER_DRAWS` seeded draws
    when every logit of the pass is rounded once more at relative size ``u`` (x(1 + u·r),
    r uniform in [-1, 1]). A score computed from logits that agree to the dtype's rounding
    can differ by this much between two correct implementations -- a Pearson correlation
    over a few prompts whose model entropies barely differ (a random-init LSTM) moves by
    tenths when the logits move by one bfloat16 rounding."""
    import dataclasses

    from bayesgeom.analyses.steer.scores import score

    base = _scores(score(po, pp, {}, ref)[0])
    g = torch.Generator().manual_seed(4)
    worst = torch.zeros_like(base)
    for _ in range(JITTER_DRAWS):
        r = torch.rand(po.logits.shape, generator=g, dtype=torch.float64) * 2 - 1
        z = (po.logits.double() * (1 + u * r)).to(po.logits.dtype)
        s = _scores(score(dataclasses.replace(po, logits=z), pp, {}, ref)[0])
        worst = torch.maximum(worst, (s - base).abs().nan_to_num(0.0))
    return worst


def _scores(s) -> torch.Tensor:
    return torch.tensor([s.cal.mae, s.cal.corr, s.kl_bayes, s.cal.h_model, s.kl_clean,
                         s.dh_next], dtype=torch.float64)


def steer_call(m: interp.InterpModel, ps: list[list[int]]) -> Outputs:
    from bayesgeom.analyses.steer.passes import Runner
    from bayesgeom.analyses.steer.scores import CleanRef, score

    layer = m.n_layers - 1  # the edited passes resume there
    site = edit_site(m, layer)
    pp = _posterior_prompts(ps * 2)
    run = Runner(m, pp, [site], [layer], batch_size=4, norm_frozen=True, progress=False,
                 direct_path=True, positions="all")
    clean = run.clean()
    ref = CleanRef.of(clean)
    edited = run.edited([interp.ShiftAlong(site, direction(m, site), delta=2.0)])
    # whether the resumed pass matched a full one (else full passes ran): recorded, not judged
    out = {"clean.logits": _out(clean.logits), "info.resumed": torch.tensor(float(run.resumed))}
    for name, po in {"clean": clean, **edited}.items():
        against = None if name == "clean" else ref
        out[f"{name}.logits"] = _out(po.logits)
        out[f"{name}.scores"] = _scores(score(po, pp, {}, against)[0])
        # recorded; the CPU side's widens the scores' bfloat16 tolerance (correctness._rows)
        out[f"info.jitter.{name}.scores"] = score_jitter(po, pp, against, rounding(m))
    return out


def taps_call(m: interp.InterpModel, ps: list[list[int]]) -> Outputs:
    from bayesgeom.interp.attention_taps import attention_gradients

    g = attention_gradients(m, m.batch(ps))
    out = {"loss": torch.tensor(g.loss, dtype=torch.float64)}
    for L, t in g.layers.items():
        for f in ("q", "k", "v", "pattern", "z", "q_grad", "k_grad", "v_grad", "pattern_grad",
                  "z_grad", "score_grad"):
            out[f"layer{L}.{f}"] = _out(getattr(t, f))
    return out


def verify_call(m: interp.InterpModel, ps: list[list[int]]) -> Outputs:
    """Per identity (controls included), the largest error over layers and heads, and the
    value-step gap |1 − ratio| per ε: ``dynamics verify`` without its run folder and report."""
    from bayesgeom.analyses.dynamics.verify.run import head_errors, value_step_gaps
    from bayesgeom.interp.attention_taps import attention_gradients, next_token_loss

    batch = m.batch(ps)
    loss_fn = lambda: next_token_loss(m, batch)  # noqa: E731
    g = attention_gradients(m, loss_fn=loss_fn)
    worst: dict[str, float] = {}
    for t in g.layers.values():
        for name, errs in head_errors(t, g.geometry).items():
            worst[name] = max(worst.get(name, 0.0), float(np.max(errs)))
    out = {f"identity.{k}": torch.tensor(v, dtype=torch.float64) for k, v in worst.items()}
    steps = value_step_gaps(m, g, loss_fn, EPSILONS, progress=False)
    for eps in EPSILONS:
        gap = float(steps.loc[steps["epsilon"] == eps, "gap"].max())
        out[f"value_step.gap@{eps:g}"] = torch.tensor(gap, dtype=torch.float64)
    return out


#: check name -> (call, needs attention heads, dtypes it is defined for: None = every dtype)
CALLS: dict[str, tuple[Callable[[interp.InterpModel, list[list[int]]], Outputs], bool,
                       tuple[str, ...] | None]] = {
    "capture": (capture_call, False, None),
    "edits": (edit_call, False, None),
    "steer_pass": (steer_call, False, None),
    "attention_taps": (taps_call, True, None),
    "dynamics_verify": (verify_call, True, ("float32",)),
}
