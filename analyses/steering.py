"""``bayesgeom steer``: is the entropy axis *used* by the model, or only a readout?

On prompts with an exact Bayes posterior over a few hypothesis tokens (SULA for a pretrained LLM,
the model's own task for a wind tunnel; :class:`analyses.posterior_prompts.PosteriorPrompts`):

1. a clean pass records, at each chosen layer ℓ, the final-token activations of the site
   (``attn.ℓ.v`` by default), the model posterior (next token restricted to the hypotheses), the
   residual stream entering the first edited layer and the final norm's scale;
2. per layer, the entropy axis is fitted to those activations and the model entropy
   (:func:`probes.fit_entropy_axis`, PC1 of standardised activations by default, oriented so its
   coordinate rises with entropy); edits use its raw-space readout direction u (a full cut makes
   the axis coordinate constant) and σ = std(x·u);
3. each condition edits every chosen layer at once: ``cut`` x − f(x·u)u for each fraction f
   (dose–response), ``keep_only`` (x·u)u, ``shift`` x + δσu for each δ; and the same edit along
   ``n_random`` random directions per layer with u's norm, orthogonal to u (shifts use the axis'
   σ, so every control moves activations by exactly as much);
4. every pass is scored twice: the **total** effect, and the **direct** effect with the final
   norm's scale frozen at its clean value (:mod:`interp.norm_freeze`);
5. per condition and metric, the axis effect is compared with the random-direction null
   (:func:`probes.null_test`: p = (1 + #{|null| ≥ |effect|}) / (n + 1)).

Metrics (bits): calibration MAE |H_model − H_Bayes| and Pearson corr(H_model, H_Bayes), overall
and per group (SULA: k; wind tunnel: prediction index q); KL(Bayes ‖ model) — the distance to the
exact posterior; mean H_model; ΔH of the full next-token distribution, KL(clean ‖ edited) over the
vocabulary and the top-1 flip rate; and corr(x·u, H_model) at each edited layer (measured on the
edited activations; NaN when a full cut makes x·u constant).

Only layers from the first edited one on are recomputed (:mod:`interp.layer_resume`, checked
against a full pass on the first batch). Each finished condition is written to ``parts/``; a
rerun with the same configuration, model and prompts resumes from there.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

import interp
from analyses.posterior_prompts import PosteriorPrompts, calibration, kl_bits, model_posterior
from interp.entropy import entropy_bits
from interp.interventions import Intervention, KeepOnly, ProjectOut, ShiftAlong
from interp.layer_resume import LayerInput, forward_from_layer, forward_recording, resume_error
from interp.norm_freeze import frozen_final_norm
from probes import (
    AxisProvenance,
    EntropyAxis,
    fit_entropy_axis,
    null_test,
    pearson,
    prompt_set_hash,
)
from windtunnel.artifacts import json_safe, run_manifest, write_json, write_table
from windtunnel.task import entropy_bits_fp64

SITE_KINDS = ("attn.v", "attn.k", "attn.q", "attn.z", "resid_pre", "resid_post", "attn_out",
              "mlp_out")
#: resumed clean logits must match the full pass to this relative error, else full passes run
RESUME_RTOL = 1e-4
#: metrics compared against the null (their change from the clean pass, except those already
#: measured relative to it)
DELTA_METRICS = ("mae", "corr", "kl_bayes", "h_model", "axis_corr")
RELATIVE_METRICS = ("kl_clean", "top1_flip", "dh_next")


class SteerError(ValueError):
    """The experiment cannot run as configured; the message says what to change."""


@dataclass
class SteerConfig:
    """One steering experiment (the CLI and notebooks build one of these).

    ``model``: Hub name, local or wind-tunnel run directory, or None (embedded SmolLM2).
    ``task``: ``"sula"`` for a text model; a wind-tunnel run's own task name (None: pick).
    ``site``: site kind edited and probed at each of ``layers`` (negatives count from the end).
    ``positions``: where edits apply (``"all"`` real tokens, as Paper III, or ``"last"``).
    ``cut_fractions`` / ``shift_deltas``: the dose–response sweeps (f removed; δ in units of σ).
    """

    model: str | None = None
    task: str | None = None
    out: Path = Path("runs/steer")
    site: str = "attn.v"
    layers: tuple[int, ...] = (-1,)
    positions: str = "all"
    axis_method: str = "pc1"
    cut_fractions: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
    keep_only: bool = True
    shift_deltas: tuple[float, ...] = (-2.0, -1.0, 1.0, 2.0)
    n_random: int = 20
    direct: bool = True
    seed: int = 0
    #: SULA prompts: examples per k and the SULA generator seed; wind tunnel: prompts
    n_per_k: int = 50
    sula_seed: int = 42
    labels: tuple[str, str] | None = None
    n_prompts: int = 250
    batch_size: int = 32
    dtype: str | None = None
    progress: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"out": str(self.out)}

    def check(self) -> None:
        if self.site not in SITE_KINDS:
            raise SteerError(f"unknown site kind {self.site!r}; choose one of "
                             f"{', '.join(SITE_KINDS)}")
        if self.positions not in ("all", "last"):
            raise SteerError(f"positions must be 'all' or 'last', got {self.positions!r}")
        if not self.layers:
            raise SteerError("give at least one layer")
        if self.n_random < 1:
            raise SteerError(f"n_random must be at least 1 (10 or more for p-values), got "
                             f"{self.n_random}")
        if not (self.cut_fractions or self.keep_only or self.shift_deltas):
            raise SteerError("no condition to run: give cut fractions, shift deltas or keep-only")
        bad = [f for f in self.cut_fractions if not 0.0 < f <= 2.0]
        if bad:
            raise SteerError(f"cut fractions must be in (0, 2], got {bad}")
        if any(d == 0 or not np.isfinite(d) for d in self.shift_deltas):
            raise SteerError("shift deltas must be finite and non-zero (δ = 0 is the clean run)")
        if self.axis_method not in ("pc1", "ridge", "mean_difference"):
            raise SteerError(f"unknown axis method {self.axis_method!r}; use pc1, ridge or "
                             "mean_difference")
        if self.batch_size < 1 or self.n_per_k < 1 or self.n_prompts < 3:
            raise SteerError("batch_size and n_per_k must be >= 1 and n_prompts >= 3")


@dataclass(frozen=True)
class Condition:
    """One edit family member: ``kind`` in {cut, keep_only, shift} with its ``param``
    (fraction removed, δ in σ, or NaN)."""

    kind: str
    param: float

    @property
    def key(self) -> str:
        return self.kind if np.isnan(self.param) else f"{self.kind}{self.param:+g}"

    def interventions(self, sites: Sequence[str], dirs: Sequence[torch.Tensor],
                      sigmas: Sequence[float], positions: str) -> list[Intervention]:
        out: list[Intervention] = []
        for s, d, sg in zip(sites, dirs, sigmas, strict=True):
            if self.kind == "cut":
                out.append(ProjectOut(s, d, fraction=self.param, positions=positions))
            elif self.kind == "keep_only":
                out.append(KeepOnly(s, d, positions=positions))
            else:
                out.append(ShiftAlong(s, d, delta=self.param, sigma=sg, positions=positions))
        return out


def conditions(cfg: SteerConfig) -> list[Condition]:
    out = [Condition("cut", float(f)) for f in cfg.cut_fractions]
    if cfg.keep_only:
        out.append(Condition("keep_only", float("nan")))
    return out + [Condition("shift", float(d)) for d in cfg.shift_deltas]


def site_name(kind: str, layer: int) -> str:
    return f"attn.{layer}.{kind.split('.')[1]}" if kind.startswith("attn.") else f"{kind}.{layer}"


# ---------------------------------------------------------------- prompts
def posterior_prompts(cfg: SteerConfig, model: interp.InterpModel) -> PosteriorPrompts:
    """The experiment's prompts: SULA (main condition) for a text model, the model's own task
    for a wind tunnel."""
    if model.task is not None:
        name = str(model.task.config()["task"])
        if cfg.task not in (None, name):
            raise SteerError(f"this wind-tunnel model was trained on {name!r}; it cannot run "
                             f"task {cfg.task!r} (use --task {name} or leave it out)")
        from analyses.task_prompts import task_posterior_prompts

        return task_posterior_prompts(model.task, cfg.n_prompts, cfg.seed)
    if cfg.task not in (None, "sula"):
        raise SteerError(f"task {cfg.task!r} needs a wind-tunnel model trained on it; text "
                         "models run the in-context task 'sula'")
    from analyses.sula import SulaConfig, sula_prompts

    scfg = SulaConfig(model=cfg.model, n_per_k=cfg.n_per_k, seed=cfg.sula_seed,
                      labels=cfg.labels, conditions=("main",))
    return sula_prompts(model, scfg, "main")


# ---------------------------------------------------------------- passes
@dataclass
class Chunk:
    """One batch with what its edited passes reuse."""

    rows: np.ndarray
    cached: LayerInput
    scale: torch.Tensor | None


@dataclass
class PassOutput:
    """Scores of one pass over every prompt: last-token ``logits`` [N, V] float32 and the
    final-token site activations per edited layer [N, F]."""

    logits: torch.Tensor
    acts: dict[int, np.ndarray] = field(default_factory=dict)


def _reader(store: list[torch.Tensor]) -> Any:
    def fn(x: torch.Tensor) -> None:
        store.append(x[:, -1].detach().float().flatten(1).cpu())  # left padding: last column
    return fn


class Runner:
    """Clean pass, then edited passes resumed from the first edited layer."""

    def __init__(self, model: interp.InterpModel, pp: PosteriorPrompts, cfg: SteerConfig,
                 layers: list[int]):
        self.m, self.pp, self.cfg, self.layers = model, pp, cfg, layers
        self.sites = [site_name(cfg.site, L) for L in layers]
        self.start = min(layers)
        self.chunks: list[Chunk] = []
        self.resume_rel_error: float | None = None
        self.resumed = True

    def _sites_hooks(self, stores: dict[int, list[torch.Tensor]]) -> list[tuple[str, Any]]:
        return [(s, _reader(stores[L])) for s, L in zip(self.sites, self.layers, strict=True)]

    def clean(self) -> PassOutput:
        tokens, _ = self.m.encode(self.pp.prompts)
        order = np.argsort([len(t) for t in tokens], kind="stable")  # less padding per batch
        stores: dict[int, list[torch.Tensor]] = {L: [] for L in self.layers}
        scales: list[torch.Tensor] = []
        logits: list[torch.Tensor] = []
        bs = self.cfg.batch_size
        bar = tqdm(total=len(tokens), desc="clean pass", unit="prompt",
                   disable=not self.cfg.progress, leave=False)
        hooks = self._sites_hooks(stores)
        if self.cfg.direct:
            hooks.append(("final_norm.scale", lambda s: scales.append(s.detach().float())))
        for i in range(0, len(order), bs):
            rows = order[i:i + bs]
            batch = self.m.batch([tokens[j] for j in rows], rows.tolist())
            with self.m.hooks(hooks):
                z, cached = forward_recording(self.m, batch, self.start, logits_to_keep=1)
            logits.append(z[:, -1].float())
            if i == 0:
                self.resume_rel_error = resume_error(self.m, cached, z)
                self.resumed = self.resume_rel_error <= RESUME_RTOL
                if not self.resumed:
                    warnings.warn(f"resuming at layer {self.start} changed the clean logits by "
                                  f"{self.resume_rel_error:.2g} (relative); running full passes",
                                  stacklevel=2)
            self.chunks.append(Chunk(rows, cached, scales[-1] if self.cfg.direct else None))
            bar.update(len(rows))
        bar.close()
        return self._assemble(logits, stores)

    def _assemble(self, logits: list[torch.Tensor], stores: dict[int, list[torch.Tensor]],
                  ) -> PassOutput:
        rows = np.concatenate([c.rows for c in self.chunks])
        inv = np.empty_like(rows)
        inv[rows] = np.arange(rows.size)
        z = torch.cat(logits)[torch.as_tensor(inv)]
        acts = {L: torch.cat(v)[torch.as_tensor(inv)].numpy() for L, v in stores.items() if v}
        return PassOutput(z, acts)

    def edited(self, ivs: list[Intervention]) -> tuple[PassOutput, PassOutput | None]:
        """(total, direct or None) for one set of edits."""
        stores: dict[int, list[torch.Tensor]] = {L: [] for L in self.layers}
        total: list[torch.Tensor] = []
        direct: list[torch.Tensor] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", interp.NilInterventionWarning)
            with self.m.intervene(*ivs):
                for c in self.chunks:
                    with self.m.hooks(self._sites_hooks(stores)):
                        total.append(self._run(c)[:, -1].float())
                    if c.scale is not None:
                        with frozen_final_norm(self.m, c.scale):
                            direct.append(self._run(c)[:, -1].float())
        t = self._assemble(total, stores)
        d = self._assemble(direct, {}) if direct else None
        return t, d

    def _run(self, c: Chunk) -> torch.Tensor:
        if self.resumed:
            return forward_from_layer(self.m, c.cached, logits_to_keep=1)
        return self.m.forward(c.cached.batch, logits_to_keep=1)


# ---------------------------------------------------------------- scoring
@dataclass
class CleanRef:
    logits: torch.Tensor
    logp: torch.Tensor
    h_next: np.ndarray
    top1: np.ndarray
    scores: dict[str, Any]


def score(out: PassOutput, pp: PosteriorPrompts, axes: dict[int, tuple[np.ndarray, float]],
          clean: CleanRef | None) -> tuple[dict[str, Any], np.ndarray]:
    """Metrics of one pass (see the module doc) and its model entropies [N] (bits). ``axes``:
    layer -> (unit direction, clean σ of the projection)."""
    p = model_posterior(out.logits, pp.hyp_ids)
    h = entropy_bits_fp64(p)
    cal = calibration(h, pp.h_bayes_bits, pp.group)
    logp = torch.log_softmax(out.logits.double(), -1)
    h_next = entropy_bits(out.logits).double().numpy()
    s: dict[str, Any] = {
        "mae": cal["mae"], "corr": cal["corr"], "kl_bayes": float(kl_bits(pp.bayes, p).mean()),
        "h_model": float(h.mean()), "per_group": cal["per_group"],
        "axis_corr": {L: _corr(out.acts[L] @ u, h, sg) for L, (u, sg) in axes.items()
                      if L in out.acts},
    }
    if clean is None:
        s |= {"kl_clean": 0.0, "top1_flip": 0.0, "dh_next": 0.0}
    else:
        kl = (clean.logp.exp() * (clean.logp - logp)).sum(-1) / np.log(2.0)
        s |= {"kl_clean": float(kl.mean()),
              "top1_flip": float((out.logits.argmax(-1).numpy() != clean.top1).mean()),
              "dh_next": float((h_next - clean.h_next).mean())}
    return s, h


def _corr(a: np.ndarray, b: np.ndarray, sigma: float) -> float:
    """Pearson corr(a, b); NaN when ``a`` is constant up to float noise (its std below 1e-4 of
    the clean spread ``sigma``, as after a full cut) or ``b`` is constant."""
    a = np.asarray(a, dtype=np.float64)
    if a.std() <= 1e-4 * sigma or np.ptp(b) == 0:
        return float("nan")
    return float(pearson(a, b))


def tidy(scores: dict[str, Any], condition: str, kind: str, param: float, direction: str,
         effect: str, group_name: str) -> list[dict[str, Any]]:
    base = {"condition": condition, "kind": kind, "param": param, "direction": direction,
            "effect": effect}
    rows = [base | {"metric": k, "group": None, "layer": None, "value": float(scores[k])}
            for k in ("mae", "corr", "kl_bayes", "h_model", "kl_clean", "top1_flip", "dh_next")]
    rows += [base | {"metric": "axis_corr", "group": None, "layer": int(L), "value": v}
             for L, v in scores["axis_corr"].items()]
    for g, st in scores["per_group"].items():
        rows += [base | {"metric": f"{m}_by_{group_name}", "group": int(g), "layer": None,
                         "value": float(st[m])} for m in ("mae", "corr", "h_model")]
    return rows


# ---------------------------------------------------------------- null comparison
def effects_table(table: pd.DataFrame, clean: dict[str, Any], head_layer: int) -> pd.DataFrame:
    """Per condition, effect and metric: the axis effect, its random null and p-value.
    Changes are taken from the clean pass (``d_*``); ``kl_clean``, ``top1_flip`` and
    ``dh_next`` already are."""
    recs = []
    overall = table[table["group"].isna() & (table["condition"] != "clean")]
    for (cond, kind, param, eff), g in overall.groupby(
            ["condition", "kind", "param", "effect"], sort=False, dropna=False):
        for metric in (*DELTA_METRICS, *RELATIVE_METRICS):
            sel = g[g["metric"] == metric]
            if metric == "axis_corr":
                sel = sel[sel["layer"] == head_layer]
            if sel.empty:
                continue
            ref = 0.0
            if metric in DELTA_METRICS:
                ref = clean["axis_corr"].get(head_layer, np.nan) if metric == "axis_corr" \
                    else clean[metric]
            axis = sel[sel["direction"] == "axis"]["value"].to_numpy() - ref
            null = sel[sel["direction"] != "axis"]["value"].to_numpy() - ref
            if axis.size == 0 or null.size == 0 or not np.isfinite(null).any():
                t_p = t_z = float("nan")
                nm = ns = float("nan")
            else:
                t = null_test(float(axis[0]), null)
                t_p, t_z, nm, ns = t.p, t.z, t.null_mean, t.null_std
            name = f"d_{metric}" if metric in DELTA_METRICS else metric
            recs.append({"condition": cond, "kind": kind, "param": param, "effect": eff,
                         "metric": name, "axis": float(axis[0]) if axis.size else float("nan"),
                         "null_mean": nm, "null_std": ns, "p": t_p, "z": t_z,
                         "n_null": int(np.isfinite(null).sum())})
    return pd.DataFrame(recs)


# ---------------------------------------------------------------- run
def edit_directions(units: dict[int, np.ndarray], n_random: int, seed: int,
                    ) -> list[tuple[str, list[torch.Tensor]]]:
    """[("axis", [u_ℓ per layer]), ("random-i", [r_ℓ,i per layer]), ...]: per layer ``n_random``
    seeded Gaussian directions with u_ℓ's norm, orthogonal to u_ℓ (seed + 1000·ℓ)."""
    layers = sorted(units)
    axis = {L: torch.as_tensor(units[L], dtype=torch.float64) for L in layers}
    controls = {L: interp.random_controls(axis[L], n_random, seed=seed + 1000 * L)
                for L in layers}
    out = [("axis", [axis[L].float() for L in layers])]
    return out + [(f"random-{i}", [controls[L][i].float() for L in layers])
                  for i in range(n_random)]


def fingerprint(cfg: SteerConfig, model: interp.InterpModel, pp: PosteriorPrompts) -> str:
    from analyses.geometry import weights_fingerprint

    keep = {k: v for k, v in cfg.to_dict().items() if k not in ("out", "progress", "batch_size")}
    blob = json.dumps([keep, weights_fingerprint(model), [str(p) for p in pp.prompts],
                       pp.bayes.round(12).tolist()], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def resolve_layers(layers: Sequence[int], n_layers: int) -> list[int]:
    out = []
    for L in layers:
        if not -n_layers <= L < n_layers:
            raise SteerError(f"layer {L} does not exist; valid layers are 0..{n_layers - 1} "
                             f"(or -{n_layers}..-1 from the end)")
        out.append(L % n_layers)
    if len(set(out)) != len(out):
        raise SteerError(f"layers {list(layers)} name the same layer twice")
    return sorted(out)


def run_steer(cfg: SteerConfig, model: interp.InterpModel | None = None,
              prompts: PosteriorPrompts | None = None) -> dict[str, Any]:
    """Run the experiment (module doc); write table/effects/summary/manifest/report under
    ``cfg.out`` and return the summary."""
    cfg.check()
    t0 = time.perf_counter()
    out = Path(cfg.out)
    m = model if model is not None else interp.load(cfg.model, dtype=cfg.dtype)
    if m.info.backend != "hf":
        raise SteerError("steering needs the 'hf' backend (hooks on the HF modules)")
    layers = resolve_layers(cfg.layers, m.n_layers)
    pp = prompts if prompts is not None else posterior_prompts(cfg, m)
    fp = fingerprint(cfg, m, pp)
    out.mkdir(parents=True, exist_ok=True)

    runner = Runner(m, pp, cfg, layers)
    clean_out = runner.clean()
    t_clean = time.perf_counter() - t0
    clean_scores, h_clean = score(clean_out, pp, {}, None)
    axes: dict[int, EntropyAxis] = {}
    units: dict[int, np.ndarray] = {}
    sigmas: dict[int, float] = {}
    for L, site in zip(layers, runner.sites, strict=True):
        x = clean_out.acts[L].astype(np.float64)
        prov = AxisProvenance(model=m.info.name, revision=m.info.revision, site=site, layer=L,
                              prompt_set=pp.name,
                              prompt_set_hash=prompt_set_hash([str(p) for p in pp.prompts]),
                              target="model posterior entropy over the hypotheses (bits)")
        ax = fit_entropy_axis(x, h_clean, method=cfg.axis_method, provenance=prov,  # type: ignore[arg-type]
                              seed=cfg.seed)
        ax.save(out / "axes" / f"L{L}")
        axes[L], units[L] = ax, ax.readout_direction
        sigmas[L] = float((x @ units[L]).std(ddof=1))
    clean_scores["axis_corr"] = {L: _corr(clean_out.acts[L] @ units[L], h_clean, sigmas[L])
                                 for L in layers}
    ref = CleanRef(clean_out.logits, torch.log_softmax(clean_out.logits.double(), -1),
                   entropy_bits(clean_out.logits).double().numpy(),
                   clean_out.logits.argmax(-1).numpy(), clean_scores)

    directions = edit_directions(units, cfg.n_random, cfg.seed)

    parts = out / "parts"
    rows: list[dict[str, Any]] = tidy(clean_scores, "clean", "clean", float("nan"), "none",
                                      "clean", pp.group_name)
    conds = conditions(cfg)
    bar = tqdm(total=len(conds) * len(directions), desc="edited passes", unit="pass",
               disable=not cfg.progress)
    reused = 0
    for cond in conds:
        part = parts / f"{cond.key}.parquet"
        meta = parts / f"{cond.key}.json"
        if part.exists() and meta.exists() and json.loads(meta.read_text()).get("fp") == fp:
            rows += pd.read_parquet(part).to_dict("records")
            bar.update(len(directions))
            reused += 1
            continue
        crow: list[dict[str, Any]] = []
        for dname, dirs in directions:
            ivs = cond.interventions(runner.sites, dirs, [sigmas[L] for L in layers],
                                     cfg.positions)
            total, direct = runner.edited(ivs)
            for eff, po in (("total", total), ("direct", direct)):
                if po is None:
                    continue
                if eff == "direct":
                    po.acts = total.acts
                s, _ = score(po, pp, {L: (units[L], sigmas[L]) for L in layers}, ref)
                crow += tidy(s, cond.key, cond.kind, cond.param, dname, eff, pp.group_name)
            bar.update(1)
        write_table(part, pd.DataFrame(crow))
        write_json(meta, {"fp": fp, "condition": cond.key})
        rows += crow
    bar.close()

    table = pd.DataFrame(rows)
    for col in ("group", "layer"):
        table[col] = table[col].astype("Int64")
    head_layer = layers[-1]
    effects = effects_table(table, clean_scores, head_layer)
    wall = time.perf_counter() - t0
    summary = build_summary(cfg, m, pp, layers, runner, clean_scores, axes, sigmas, effects,
                            head_layer, fp, wall, t_clean, reused)
    write_table(out / "table.parquet", table)
    write_table(out / "effects.parquet", effects)
    write_table(out / "prompts.parquet", pp.table().assign(
        h_model_clean_bits=h_clean, **{f"axis_L{L}": clean_out.acts[L] @ units[L]
                                       for L in layers}))
    manifest = run_manifest(seed=cfg.seed, dtype=m.info.dtype, model=m.info.to_dict(),
                            steer=cfg.to_dict(), fingerprint=fp)
    write_json(out / "manifest.json", manifest)
    write_json(out / "summary.json", summary)
    from analyses.steering_report import write_report

    write_report(out / "report.html", summary, table, effects, manifest)
    return summary


def _headline(effects: pd.DataFrame, cond: str, effect: str = "total") -> dict[str, Any]:
    sel = effects[(effects["condition"] == cond) & (effects["effect"] == effect)]
    return {r["metric"]: {"axis": r["axis"], "null_mean": r["null_mean"], "p": r["p"],
                          "z": r["z"]} for r in sel.to_dict("records")}


def build_summary(cfg: SteerConfig, m: interp.InterpModel, pp: PosteriorPrompts,
                  layers: list[int], runner: Runner, clean: dict[str, Any],
                  axes: dict[int, EntropyAxis], sigmas: dict[int, float],
                  effects: pd.DataFrame, head_layer: int, fp: str, wall: float,
                  t_clean: float, reused: int) -> dict[str, Any]:
    conds = [c.key for c in conditions(cfg)]
    return json_safe({
        "model": m.info.name, "model_info": m.info.to_dict(), "task": pp.name,
        "n_prompts": len(pp), "group_name": pp.group_name, "layers": layers,
        "sites": runner.sites, "positions": cfg.positions, "n_random": cfg.n_random,
        "direct": cfg.direct, "fingerprint": fp,
        "resume": {"from_layer": runner.start, "used": runner.resumed,
                   "clean_rel_error": runner.resume_rel_error},
        "axes": {str(L): {"method": ax.method, "pearson_h_model": ax.pearson,
                          "spearman_h_model": ax.spearman,
                          "explained_variance_ratio": ax.explained_variance_ratio,
                          "sigma_raw": sigmas[L], "dim": ax.dim} for L, ax in axes.items()},
        "clean": {"mae": clean["mae"], "corr": clean["corr"], "kl_bayes": clean["kl_bayes"],
                  "h_model": clean["h_model"],
                  "axis_corr": {str(k): v for k, v in clean["axis_corr"].items()},
                  "per_group": {str(k): v for k, v in clean["per_group"].items()}},
        "conditions": conds,
        "headline": {c: {"total": _headline(effects, c, "total"),
                         **({"direct": _headline(effects, c, "direct")} if cfg.direct else {})}
                     for c in conds},
        "wall_s": round(wall, 2), "clean_pass_s": round(t_clean, 2),
        "reused_conditions": reused,
    })


def format_summary(s: dict[str, Any]) -> str:
    """A compact terminal table: per condition, the total (and direct) effect on calibration
    MAE, KL to the clean distribution and top-1 flips, each with its p against the null."""
    c = s["clean"]
    head = (f"{s['model']} · {s['task']} · {s['n_prompts']} prompts · sites "
            f"{', '.join(s['sites'])} · {s['n_random']} random directions\n"
            f"clean: MAE {_f(c['mae'])} bits, corr(H_model, H_Bayes) {_f(c['corr'])}, "
            f"KL(Bayes‖model) {_f(c['kl_bayes'])} bits, axis corr "
            + ", ".join(f"L{k} {_f(v)}" for k, v in c["axis_corr"].items()))
    lines = [head, f"{'condition':<12} {'effect':<7} {'ΔMAE bits (p)':>18} "
             f"{'ΔKL→Bayes (p)':>18} {'KL→clean (p)':>18} {'flips':>6} {'Δaxis corr':>11}"]
    for cond, effs in s["headline"].items():
        for eff, mets in effs.items():
            def cell(k: str, mets: dict[str, Any] = mets) -> str:
                r = mets.get(k, {})
                return f"{_f(r.get('axis'))} ({_f(r.get('p'), 2)})"
            flips = mets.get("top1_flip", {}).get("axis")
            dax = mets.get("d_axis_corr", {}).get("axis")
            lines.append(f"{cond:<12} {eff:<7} {cell('d_mae'):>18} {cell('d_kl_bayes'):>18} "
                         f"{cell('kl_clean'):>18} {_f(flips, 2):>6} {_f(dax, 2):>11}")
    return "\n".join(lines)


def _f(x: float | None, nd: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "n/a"
    if nd == 3 and 0 < abs(x) < 5e-4:
        return f"{x:+.1e}"  # effects below the printed precision stay visible
    return f"{x:+.{nd}f}" if nd == 3 else f"{x:.{nd}f}"
