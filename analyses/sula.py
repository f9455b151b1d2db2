"""``bayesgeom sula``: is a pretrained LLM's in-context uncertainty calibrated to the exact
Bayes posterior? (Paper III §5.2, with its three controls.)

Per condition (:mod:`windtunnel.sula`: main, lexical remap, shuffled labels, evidence ablation)
and k, the model's posterior is its next-token probability over the two label tokens,
renormalised; H_model is its binary entropy (bits). Reported, overall and per k: calibration
MAE |H_model − H_Bayes| and Pearson corr(H_model, H_Bayes); the probability mass the model puts
on the two labels at all; and the geometry of the last-layer values at the final token — PC1
of a PCA fitted on all conditions together (shared basis, standardised), its |Spearman ρ| with
H_Bayes and with H_model, and ρ(k, PC1).

Label words must each be a single token after ": " for the model's tokenizer; the first that are
among :data:`windtunnel.sula.LABEL_CANDIDATES` (then consonant–vowel–consonant words) are picked,
and given labels that are not single tokens are refused with the reason.

Each condition's scores are cached in ``parts/`` keyed by model weights and prompts, so a rerun
(or the demo's) reuses them.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

import interp
from analyses.posterior_prompts import PosteriorPrompts, calibration, model_posterior
from probes import fit_pca, spearman
from probes.atomic_io import atomic_write_bytes
from windtunnel.artifacts import json_safe, run_manifest, write_json, write_table
from windtunnel.sula import (
    ALPHA,
    CARRIER_WORDS,
    CONDITIONS,
    KS,
    LABEL_CANDIDATES,
    SulaError,
    cvc_words,
    draw,
    expected_entropy_bits,
    render,
)
from windtunnel.task import entropy_bits_fp64

#: Paper III's SULA calibration MAE (bits, main condition, 250 prompts)
PAPER3_MAE = {"Pythia-410M": 0.44, "Llama-3.2-1B": 0.36, "Phi-2": 0.31}
#: a context word the label follows in every prompt (used for the single-token check)
_PROBE_CONTEXT = "good:"


@dataclass
class SulaConfig:
    """One SULA run (the CLI and notebooks build one of these).

    ``model``: Hub name or local directory, None = embedded SmolLM2. ``labels`` /
    ``remap_labels``: label pairs (None: the first single-token candidates). ``site``: the
    site kind whose final-token activations give the geometry (last layer)."""

    model: str | None = None
    out: Path = Path("runs/sula")
    ks: tuple[int, ...] = KS
    n_per_k: int = 50
    seed: int = 42
    alpha: float = ALPHA
    labels: tuple[str, str] | None = None
    remap_labels: tuple[str, str] | None = None
    conditions: tuple[str, ...] = CONDITIONS
    site: str = "attn.v"
    batch_size: int = 16
    dtype: str | None = None
    progress: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"out": str(self.out)}

    def check(self) -> None:
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if bad or not self.conditions:
            raise SulaError(f"unknown SULA condition(s) {bad or '(none given)'}; choose from "
                            f"{', '.join(CONDITIONS)}")
        if self.n_per_k < 1 or self.batch_size < 1:
            raise SulaError("n_per_k and batch_size must be at least 1")
        if self.site not in ("attn.v", "attn.k", "attn.q", "attn.z", "resid_post", "resid_pre"):
            raise SulaError(f"site {self.site!r} is not a per-layer activation site; use attn.v "
                            "(default), attn.k, attn.q, attn.z, resid_pre or resid_post")


# ---------------------------------------------------------------- labels
def label_token(tokenizer: Any, word: str, context: str = _PROBE_CONTEXT) -> int | None:
    """The one token id ``" " + word`` adds after ``context``, or None when it takes more than
    one token (or merges with the context)."""
    if tokenizer is None:
        raise SulaError("SULA needs a text model with a tokenizer (a wind-tunnel model has none; "
                        "use its own task instead)")
    base = tokenizer.encode(context, add_special_tokens=False)
    full = tokenizer.encode(f"{context} {word}", add_special_tokens=False)
    if len(full) != len(base) + 1 or full[: len(base)] != base:
        return None
    return int(full[-1])


def pick_labels(tokenizer: Any, labels: tuple[str, str] | None = None,
                remap_labels: tuple[str, str] | None = None,
                ) -> tuple[tuple[str, str], tuple[str, str], dict[str, int]]:
    """(labels, remap_labels, word → token id), each word one token for ``tokenizer``; missing
    pairs are filled from the candidates in order. Raises :class:`SulaError` naming a given
    label that is not a single token, with single-token alternatives."""
    given = [w for pair in (labels, remap_labels) if pair for w in pair]
    if len(set(given)) != len(given):
        raise SulaError(f"label words must all differ, got {given}")
    ids = {w: label_token(tokenizer, w) for w in given}
    pool = [w for w in (*LABEL_CANDIDATES, *cvc_words(400)) if w not in given]

    def free(n: int) -> list[str]:
        """The first ``n`` candidates that are single tokens distinct from every chosen one."""
        out: list[str] = []
        for w in itertools.chain(pool, _vocab_words(tokenizer, set(given) | set(pool))):
            if len(out) >= n:
                break
            t = label_token(tokenizer, w)
            if t is not None and t not in ids.values():
                out.append(w)
                ids[w] = t
        return out

    for w, t in list(ids.items()):
        if t is None:
            n = len(tokenizer.encode(f"{_PROBE_CONTEXT} {w}", add_special_tokens=False)) \
                - len(tokenizer.encode(_PROBE_CONTEXT, add_special_tokens=False))
            del ids[w]
            raise SulaError(f"label {w!r} is not a single token for this tokenizer (' {w}' "
                            f"takes {n} tokens after ':'); choose single-token labels, e.g. "
                            f"{', '.join(free(4))}")
    if len(set(ids.values())) != len(given):
        raise SulaError(f"labels {given} map to the same token")
    need = (0 if labels else 2) + (0 if remap_labels else 2)
    found = free(need) if need else []
    if len(found) < need:
        raise SulaError(f"found only {len(found)} single-token label words for this tokenizer "
                        f"({', '.join(found) or 'none'}) among {len(pool)} candidates; pass "
                        "labels and remap_labels that are one token each after ': '")
    it = iter(found)
    lab = labels or (next(it), next(it))
    rem = remap_labels or (next(it), next(it))
    return lab, rem, {w: ids[w] for w in (*lab, *rem)}


def _vocab_words(tokenizer: Any, skip: set[str]) -> Iterator[str]:
    """Last-resort label candidates: vocabulary entries that decode to a space and 2–8 lowercase
    letters (not a carrier word), in id order."""
    n = len(tokenizer) if hasattr(tokenizer, "__len__") else 0
    for i in range(n):
        text = tokenizer.decode([i])
        w = text[1:]
        if text.startswith(" ") and 2 <= len(w) <= 8 and w.isascii() and w.isalpha() \
                and w.islower() and w not in skip and w not in CARRIER_WORDS:
            yield w


# ---------------------------------------------------------------- prompts
def sula_prompts(model: interp.InterpModel, cfg: SulaConfig, condition: str,
                 ) -> PosteriorPrompts:
    """One condition's prompts with the label token ids and the exact posterior
    (:class:`PosteriorPrompts`, ``group`` = k; meta: condition, y, m, label words)."""
    cfg.check()
    lab, rem, ids = pick_labels(model.tokenizer, cfg.labels, cfg.remap_labels)
    d = draw(cfg.ks, cfg.n_per_k, cfg.alpha, cfg.seed)
    sp = render(d, condition, lab, rem)
    hyp = np.array([ids[sp.label_words[0]], ids[sp.label_words[1]]], dtype=np.int64)
    meta = pd.DataFrame({"condition": condition, "y": sp.y, "m": sp.m,
                         "label_1": sp.label_words[0], "label_2": sp.label_words[1],
                         "text": sp.texts})
    return PosteriorPrompts(name=f"sula-{condition}", prompts=sp.texts,
                            hyp_ids=np.broadcast_to(hyp, (len(d), 2)).copy(),
                            bayes=sp.posterior, group=sp.k, group_name="k", meta=meta)


# ---------------------------------------------------------------- scoring
def _fingerprint(m: interp.InterpModel, pp: PosteriorPrompts, site: str) -> str:
    from analyses.geometry import weights_fingerprint

    blob = json.dumps([weights_fingerprint(m), m.info.dtype, site, list(pp.prompts),
                       pp.hyp_ids.tolist()])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def score_condition(m: interp.InterpModel, pp: PosteriorPrompts, site: str, batch_size: int,
                    progress: bool, parts: Path | None = None,
                    ) -> tuple[pd.DataFrame, np.ndarray, bool]:
    """Per-prompt scores (``pp.table()`` + p_model_1, h_model_bits, label_mass) and the final-token
    activations [N, F] of ``site``; cached under ``parts`` (returns reused=True on a hit)."""
    fp = _fingerprint(m, pp, site)
    cond = str(pp.meta["condition"].iloc[0])
    if parts is not None:
        tab, npy, meta = (parts / f"{cond}.parquet", parts / f"{cond}.npy",
                          parts / f"{cond}.json")
        if tab.exists() and npy.exists() and meta.exists() \
                and json.loads(meta.read_text()).get("fp") == fp:
            return pd.read_parquet(tab), np.load(npy, allow_pickle=False), True
    store = interp.capture(m, list(pp.prompts), [site, "logits"], positions="last",
                           batch_size=batch_size, progress=progress)
    logits = store["logits"]
    post = model_posterior(logits, pp.hyp_ids)
    mass = torch.softmax(logits.double(), -1).gather(
        1, torch.as_tensor(pp.hyp_ids)).sum(1).numpy()
    acts = store[site].float().flatten(1).numpy()
    df = pp.table().assign(p_model_1=post[:, 0], h_model_bits=entropy_bits_fp64(post),
                           label_mass=mass, p_bayes_1=pp.bayes[:, 0])
    if parts is not None:
        write_table(tab, df)
        buf = io.BytesIO()
        np.save(buf, acts, allow_pickle=False)
        atomic_write_bytes(npy, buf.getvalue())
        write_json(meta, {"fp": fp, "condition": cond, "n": len(pp)})
    return df, acts, False


def _corr_abs(a: np.ndarray, b: np.ndarray) -> float | None:
    if a.size < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(abs(spearman(a, b)))


def geometry(per: dict[str, pd.DataFrame], acts: dict[str, np.ndarray]) -> dict[str, Any]:
    """Shared-basis PC1 (standardised PCA over every condition's activations) per prompt, and
    per condition |ρ(PC1, H_Bayes)|, |ρ(PC1, H_model)|, ρ(k, PC1) (Spearman; PC1's sign is
    oriented so that ρ(PC1, H_model) over all prompts is ≥ 0). Adds ``pc1`` to each table."""
    conds = list(per)
    x = np.concatenate([acts[c] for c in conds]).astype(np.float64)
    pca = fit_pca(x, standardize=True, n_components=2)
    z = pca.transform(x)[:, 0]
    h_all = np.concatenate([per[c]["h_model_bits"].to_numpy() for c in conds])
    if np.ptp(h_all) > 0 and float(spearman(z, h_all)) < 0:
        z = -z
    out: dict[str, Any] = {"explained_variance_ratio": [float(r) for r in
                                                        pca.explained_variance_ratio[:2]]}
    lo = 0
    for c in conds:
        n = len(per[c])
        pc = z[lo:lo + n]
        lo += n
        per[c]["pc1"] = pc
        k = per[c]["k"].to_numpy()
        rho_k = None if np.ptp(k) == 0 or np.ptp(pc) == 0 else float(spearman(k, pc))
        out[c] = {"abs_rho_pc1_h_bayes": _corr_abs(pc, per[c]["h_bayes_bits"].to_numpy()),
                  "abs_rho_pc1_h_model": _corr_abs(pc, per[c]["h_model_bits"].to_numpy()),
                  "rho_k_pc1": rho_k}
    return out


# ---------------------------------------------------------------- the run
def run_sula(cfg: SulaConfig, model: interp.InterpModel | None = None) -> dict[str, Any]:
    """Run every condition (module doc); write table.parquet (one row per prompt), per_k.parquet,
    summary.json, manifest.json and report.html under ``cfg.out``; return the summary."""
    cfg.check()
    t0 = time.perf_counter()
    out = Path(cfg.out)
    m = model if model is not None else interp.load(cfg.model, dtype=cfg.dtype)
    if m.tokenizer is None:
        raise SulaError("SULA needs a text model with a tokenizer; a wind-tunnel model runs "
                        "its own task (bayesgeom steer --model RUN)")
    lab, rem, ids = pick_labels(m.tokenizer, cfg.labels, cfg.remap_labels)
    from analyses.steering import site_name

    site = site_name(cfg.site, m.n_layers - 1)
    resolved = SulaConfig(**{**asdict(cfg), "labels": lab, "remap_labels": rem})
    out.mkdir(parents=True, exist_ok=True)

    per: dict[str, pd.DataFrame] = {}
    acts: dict[str, np.ndarray] = {}
    reused = []
    for cond in cfg.conditions:
        pp = sula_prompts(m, resolved, cond)
        per[cond], acts[cond], hit = score_condition(m, pp, site, cfg.batch_size, cfg.progress,
                                                     out / "parts")
        if hit:
            reused.append(cond)
    geo = geometry(per, acts)
    table = pd.concat([per[c] for c in cfg.conditions], ignore_index=True)
    per_k = per_k_table(table)
    cal = {c: calibration(per[c]["h_model_bits"].to_numpy(), per[c]["h_bayes_bits"].to_numpy(),
                          per[c]["k"].to_numpy()) for c in cfg.conditions}
    summary = json_safe({
        "model": m.info.name, "model_info": m.info.to_dict(), "site": site,
        "labels": list(lab), "remap_labels": list(rem),
        "label_token_ids": {w: int(i) for w, i in ids.items()},
        "ks": list(cfg.ks), "n_per_k": cfg.n_per_k, "alpha": cfg.alpha, "seed": cfg.seed,
        "expected_h_bayes_bits": {str(k): expected_entropy_bits(k, cfg.alpha) for k in cfg.ks},
        "conditions": {c: {
            "mae": cal[c]["mae"], "corr": cal[c]["corr"], "n": cal[c]["n"],
            "h_model": cal[c]["h_model"], "h_bayes": cal[c]["h_bayes"],
            "label_mass": float(per[c]["label_mass"].mean()),
            "per_k": {str(k): v for k, v in cal[c]["per_group"].items()},
            **geo[c]} for c in cfg.conditions},
        "pc_explained_variance_ratio": geo["explained_variance_ratio"],
        "paper3_mae_bits": PAPER3_MAE,
        "reused_conditions": reused,
        "wall_s": round(time.perf_counter() - t0, 2),
    })
    manifest = run_manifest(seed=cfg.seed, dtype=m.info.dtype, model=m.info.to_dict(),
                            sula=resolved.to_dict())
    write_table(out / "table.parquet", table)
    write_table(out / "per_k.parquet", per_k)
    write_json(out / "summary.json", summary)
    write_json(out / "manifest.json", manifest)
    from analyses.report import html_report

    html_report(out / "report.html", f"SULA calibration — {m.info.name}", [
        ("Summary", format_summary(summary)),
        ("Entropy per k", calibration_figure(per_k)),
        ("Per k", per_k),
        ("Last-layer PC1 per k (shared basis)", pc1_figure(per_k)),
    ], manifest)
    return summary


def per_k_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per condition and k: n, mean H_Bayes / H_model (bits), MAE, corr, label mass, PC1
    mean and std (the tidy per-k view of ``table``)."""
    rows = []
    for (c, k), g in table.groupby(["condition", "k"], sort=False):
        hm, hb = g["h_model_bits"].to_numpy(), g["h_bayes_bits"].to_numpy()
        cal = calibration(hm, hb)
        rows.append({"condition": c, "k": int(k), "n": len(g), "h_bayes_bits": hb.mean(),
                     "h_model_bits": hm.mean(), "h_model_std": hm.std(ddof=1) if len(g) > 1
                     else float("nan"), "mae": cal["mae"], "corr": cal["corr"],
                     "label_mass": g["label_mass"].mean(),
                     "pc1_mean": g["pc1"].mean() if "pc1" in g else float("nan"),
                     "pc1_std": g["pc1"].std(ddof=1) if "pc1" in g and len(g) > 1
                     else float("nan")})
    return pd.DataFrame(rows)


def calibration_figure(per_k: pd.DataFrame) -> go.Figure:
    """Mean H_model per k for each condition beside H_Bayes (bits)."""
    fig = make_subplots(rows=1, cols=len(per_k["condition"].unique()), shared_yaxes=True,
                        subplot_titles=list(per_k["condition"].unique()))
    for i, (_, g) in enumerate(per_k.groupby("condition", sort=False), start=1):
        fig.add_trace(go.Scatter(x=g["k"], y=g["h_bayes_bits"], name="H_Bayes",
                                 mode="lines+markers", line={"dash": "dash", "color": "black"},
                                 showlegend=i == 1), row=1, col=i)
        fig.add_trace(go.Scatter(x=g["k"], y=g["h_model_bits"], name="H_model",
                                 mode="lines+markers", line={"color": "#1f77b4"},
                                 error_y={"type": "data", "array": g["h_model_std"]},
                                 showlegend=i == 1), row=1, col=i)
    fig.update_yaxes(title_text="entropy (bits)", row=1, col=1)
    fig.update_xaxes(title_text="k examples")
    fig.update_layout(height=360, margin={"t": 40})
    return fig


def pc1_figure(per_k: pd.DataFrame) -> go.Figure:
    """Shared-basis PC1 (mean ± std over prompts) per k, one line per condition."""
    fig = go.Figure()
    for c, g in per_k.groupby("condition", sort=False):
        fig.add_trace(go.Scatter(x=g["k"], y=g["pc1_mean"], name=str(c), mode="lines+markers",
                                 error_y={"type": "data", "array": g["pc1_std"]}))
    fig.update_layout(xaxis_title="k examples", yaxis_title="PC1 (standardised values)",
                      height=360, margin={"t": 30})
    return fig


def format_summary(s: dict[str, Any]) -> str:
    """A compact terminal table: per condition MAE, corr and mean H_model per k."""
    ks = [str(k) for k in s["ks"]]
    ref = ", ".join(f"{k} {v:.2f}" for k, v in s["paper3_mae_bits"].items())
    lines = [f"{s['model']} · SULA · labels {'/'.join(s['labels'])} (remap "
             f"{'/'.join(s['remap_labels'])}) · {s['n_per_k']} prompts per k",
             f"Paper III main-condition MAE: {ref} bits",
             f"{'condition':<9} {'MAE':>6} {'corr':>6} {'mass':>5} {'|ρ PC1,H_B|':>11}  "
             + " ".join(f"{'H k=' + k:>7}" for k in ks)]
    exp = s["expected_h_bayes_bits"]
    lines.append(f"{'Bayes':<9} {'':>6} {'':>6} {'':>5} {'':>11}  "
                 + " ".join(f"{exp[k]:>7.3f}" for k in ks))
    for c, r in s["conditions"].items():
        hk = " ".join(f"{_n(r['per_k'].get(k, {}).get('h_model')):>7}" for k in ks)
        lines.append(f"{c:<9} {_n(r['mae']):>6} {_n(r['corr']):>6} {_n(r['label_mass'], 2):>5} "
                     f"{_n(r['abs_rho_pc1_h_bayes']):>11}  {hk}")
    return "\n".join(lines)


def _n(x: float | None, nd: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{nd}f}"
